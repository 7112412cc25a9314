/**
 * A tool host's memory of the approvals it accepted: each decision (by its `requestId`) lets one
 * call run, the call it was first presented with (by idempotency key). The same call again (a
 * redelivery, a retry after a resume) gets that call's answer; another call presenting the same
 * decision is a replay. An entry is kept until the decision can no longer be accepted anyway (its
 * deadline plus the clock-skew tolerance), and at least `retainMs` after its answer, so a late
 * redelivery is answered, not refused. Entries are only made for decisions that verified (signed
 * by a key the policy allows), so nobody else can grow this memory.
 */
import type { Clock } from '@signalbox/core'

export type Claim<T> =
  /** First use: run the call and `settle` its answer (a redelivery waits for it). */
  | { kind: 'first'; settle(answer: T): void }
  /** The same call was presented with this decision before: its answer (once it has one). */
  | { kind: 'same'; answer: Promise<T> }
  /** Another call used this decision: a replay. */
  | { kind: 'other'; identity: string }

interface Entry<T> {
  identity: string
  answer: Promise<T>
  /** Epoch ms after which the entry may go; undefined while the call runs (never evicted then). */
  keepUntil: number | undefined
}

export class UsedApprovals<T> {
  readonly #entries = new Map<string, Entry<T>>()
  readonly #clock: Clock
  readonly #retainMs: number

  constructor(options: { clock: Clock; retainMs: number }) {
    this.#clock = options.clock
    this.#retainMs = options.retainMs
  }

  /** Claims `requestId` for the call `identity`; the claim is held at least until `holdUntil`. */
  claim(requestId: string, identity: string, holdUntil: number): Claim<T> {
    this.#sweep()
    const existing = this.#entries.get(requestId)
    if (existing !== undefined) {
      return existing.identity === identity
        ? { kind: 'same', answer: existing.answer }
        : { kind: 'other', identity: existing.identity }
    }
    let resolve!: (answer: T) => void
    const entry: Entry<T> = { identity, answer: new Promise<T>((r) => (resolve = r)), keepUntil: undefined }
    this.#entries.set(requestId, entry)
    return {
      kind: 'first',
      settle: (answer) => {
        if (entry.keepUntil !== undefined) return
        entry.keepUntil = Math.max(holdUntil, this.#clock.now() + this.#retainMs)
        resolve(answer)
      },
    }
  }

  /** Forgets a first claim that could not go ahead (nothing ran): the next presentation is judged again. */
  release(requestId: string): void {
    const entry = this.#entries.get(requestId)
    if (entry !== undefined && entry.keepUntil === undefined) this.#entries.delete(requestId)
  }

  /** Approvals remembered now (running calls included). */
  get size(): number {
    return this.#entries.size
  }

  #sweep(): void {
    const now = this.#clock.now()
    for (const [requestId, entry] of this.#entries) {
      if (entry.keepUntil !== undefined && entry.keepUntil < now) this.#entries.delete(requestId)
    }
  }
}

/**
 * What a retry of a call learns from the ledger: the call's answer; or `unkept`, it was answered
 * but the answer was too large to keep; or `unanswered`, none was recorded by the call's deadline
 * (the host that ran it stopped: it may or may not have taken effect).
 */
export type SameCallAnswer<T> = { answer: T } | 'unkept' | 'unanswered'

/**
 * The memory of used approvals that every host of a pool shares, and that outlives a process (a
 * JetStream KV bucket: `kvUsedApprovals`): the first host to record a decision's use wins, so a
 * replay is refused by any host, also after a restart. The host's own `UsedApprovals` stays in
 * front of it (a redelivery to the same process never asks the ledger).
 */
export interface SharedApprovalLedger<T> {
  /** How long an entry is kept (the bucket's age limit): a decision valid for longer is refused. */
  retentionMs(signal: AbortSignal): Promise<number>
  /**
   * Claims `requestId` for the call `identity`. `first`: this host runs the call and `settle`s its
   * answer (kept for the call's retries). `same`: the call was claimed before (by this host before
   * a restart, or another host): its answer, once recorded (see `SameCallAnswer`). `other`: a replay.
   */
  claim(
    requestId: string,
    identity: string,
    options: { answerBy: number; signal: AbortSignal },
  ): Promise<
    | { kind: 'first'; settle(answer: T): Promise<void> }
    | { kind: 'same'; answer: Promise<SameCallAnswer<T>> }
    | { kind: 'other'; identity: string }
  >
}
