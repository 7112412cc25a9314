import type { Clock } from '../clock.ts'
import type { ApprovalDecision } from '../hitl/types.ts'
import type { Message } from '../messages.ts'
import type { AppliedDecision, Checkpoint, LedgerEntry, LedgerToolResult, PendingQuestion, RunCarry } from './checkpoint.ts'
import { CHECKPOINT_VERSION } from './checkpoint.ts'
import { findCall, finishCall, startCall } from './ledger.ts'
import type { RunStore } from './run-store.ts'
import {
  type JournaledActor,
  type JournaledSnapshot,
  type PersistedSnapshot,
  persistedWithoutTranscript,
  storedStatus,
  toolMessageOf,
  withoutCallOutput,
} from './stored-snapshot.ts'

export type { JournaledActor, JournaledSnapshot } from './stored-snapshot.ts'

export interface RunJournalOptions {
  store: RunStore
  runId: string
  agentId: string
  runPath: string[]
  owner: string
  leaseMs: number
  clock: Clock
  /** What was stored, when the run is resumed (absent for a new run). */
  resumed?: { checkpoint: Checkpoint; revision: number }
  /** For a new run: the last steering message the agent had consumed when the run began. */
  steeringCursor?: number
  /**
   * The agent rewrites what the model reads of a tool's output (`afterToolExecution` hooks) and
   * does not keep raw outputs: nothing of a call's raw output is stored, only what the model read.
   */
  masksToolOutput?: boolean
  /** For a new run: what its instrumentations keep with it (asked at each save until it gives something). */
  carry?: () => RunCarry | undefined
  /** The run cannot go on: a write failed or another process took it (compare-and-set lost). */
  onLost?(error: unknown): void
}

/**
 * The durable side of one run: its write queue, tool-call ledger and applied decisions. Saves are
 * serialized (each knows the revision the previous one returned) and coalesced: a save asked for
 * while another waits to start is the same save, and it writes the run as it stands when it starts
 * (only the newest checkpoint matters). Each save appends the messages added since the last one to
 * the log, then writes the checkpoint, so the transcript is written once, not once per step.
 */
export class RunJournal {
  readonly runId: string
  readonly #options: RunJournalOptions
  #actor: JournaledActor | undefined
  #revision: number | undefined
  #persistedLength: number
  #epoch: number
  #createdAt: number
  #ledger: LedgerEntry[]
  #applied: AppliedDecision[]
  /** The approval wait the stored run was resumed in: already durable, so re-entering it writes nothing. */
  #resumedWait: string | undefined
  /** The question the call in hand waits on (`ask_human`), kept until it is answered or timed out. */
  #questions: PendingQuestion[]
  #steeringCursor: number | undefined
  /** What the instrumentations keep with the run: kept as first stored, across resumes. */
  #carried: RunCarry | undefined
  /** A save that waits for its turn (not started): later requests join it. */
  #queued: Promise<void> | undefined
  /** Whether the queued save must be synced (one request that needs it is enough). */
  #queuedSync = false
  /** Starts the queued unsynced save now instead of after its grace (see `#defer`). */
  #startDeferred: (() => void) | undefined
  #tail: Promise<void> = Promise.resolve()
  #failure: unknown
  #finished = false
  #seen: { messages: unknown; steering: unknown; approval: unknown } = {
    messages: undefined,
    steering: undefined,
    approval: undefined,
  }
  /** Calls whose `finished` result holds the tool's raw output, stored only once the model read it masked. */
  #unmasked = new Set<string>()
  /** What the last write stored: written again (with a fresh lease) while a raw output must not be stored. */
  #lastStored: CapturedState | undefined
  readonly #abort = new AbortController()
  #renewTimer: unknown
  /** When the lease of the last write runs out (the lease the write in flight takes, until it is stored). */
  #leaseUntil: number
  #writingLease = 0
  /** Told when the run cannot go on (a write failed, or the compare-and-set was lost): the owner stops it. */
  onLost: (error: unknown) => void

  constructor(options: RunJournalOptions) {
    this.#options = options
    this.runId = options.runId
    const stored = options.resumed
    this.#revision = stored?.revision
    this.#persistedLength = stored?.checkpoint.transcript.length ?? 0
    this.#epoch = stored?.checkpoint.lease?.epoch ?? 0
    this.#createdAt = stored?.checkpoint.createdAt ?? options.clock.now()
    this.#ledger = stored ? [...stored.checkpoint.ledger] : []
    this.#applied = stored ? [...stored.checkpoint.appliedDecisions] : []
    this.#questions = stored ? [...stored.checkpoint.pending.questions] : []
    this.#resumedWait = stored?.checkpoint.pending.approvals[0]?.requestId
    this.#steeringCursor = stored ? stored.checkpoint.steeringCursor : options.steeringCursor
    this.#carried = stored?.checkpoint.carry
    this.#leaseUntil = stored?.checkpoint.lease?.expiresAt ?? 0
    this.onLost = options.onLost ?? (() => {})
  }

  /**
   * Resolves while this process still owns the run: at once while the lease of its last write has
   * more than a renewal interval to go, else after a write that renews it. A process that stalled
   * past its lease (a paused VM, a long pause, an overloaded machine) may have lost the run to a
   * host that took it over meanwhile: that write is refused, the run is lost (`onLost`) and this
   * rejects, so what reached the run meanwhile (a person's decision, a deadline) is applied only by
   * the host that owns it, never audited by both.
   */
  confirmLease(): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure)
    if (this.#options.clock.now() + this.#renewEveryMs() < this.#leaseUntil) return Promise.resolve()
    return this.save({ sync: false })
  }

  #renewEveryMs(): number {
    return Math.max(1, Math.floor(this.#options.leaseMs / 3))
  }

  /** The actor whose snapshots this journal saves; its first snapshot is saved at once. */
  attach(actor: JournaledActor): void {
    this.#actor = actor
    this.#renew()
  }

  /** Called with every snapshot: saves at the settled boundaries only (transcript, steering or wait changed, run ended). */
  observe(snapshot: JournaledSnapshot): void {
    // Stopped (not finished): the process lets go of the run; what is stored stays resumable.
    if (snapshot.status === 'stopped') return
    const { context } = snapshot
    const approval = snapshot.hasTag('human') ? context.current?.approval : undefined
    const seen = this.#seen
    if (
      snapshot.status === 'active' &&
      seen.messages === context.messages &&
      seen.steering === context.steering &&
      seen.approval === approval
    ) {
      return
    }
    this.#seen = { messages: context.messages, steering: context.steering, approval }
    // Synced only when the run ends (its result resolves once stored); the rest can wait for the next sync.
    this.save({ sync: snapshot.status !== 'active' }).catch(() => {})
  }

  /**
   * Saves the run as it stands when the write starts; resolves once it is written. `sync` (the
   * default): durable against a power loss before this resolves, used before a side effect or a
   * wait for a person. `sync: false` (a model reply, a tool's result, steering, a lease renewal):
   * atomic and safe against the death of the process; the next synced save covers it.
   */
  save(options: { sync?: boolean } = {}): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure)
    if (options.sync !== false) {
      this.#queuedSync = true
      // A synced request does not wait out the grace of the unsynced one it joins.
      this.#startDeferred?.()
    }
    if (this.#queued) return this.#queued
    const queued = this.#tail
      .then(() => (this.#queuedSync ? undefined : this.#defer()))
      .then(() => {
        this.#queued = undefined
        const sync = this.#queuedSync
        this.#queuedSync = false
        return this.#write(sync)
      })
    this.#queued = queued
    this.#tail = queued.catch(() => {})
    return queued
  }

  /**
   * An unsynced save waits one turn of the event loop before it starts, so the synced save that
   * usually follows at once joins it: a model reply that asks for a tool is stored by the blocking
   * save before the tool (one write, not two), and a tool's result and its transcript message go in
   * one write. Nothing waits on an unsynced save for its safety, so the delay costs nothing.
   */
  #defer(): Promise<void> {
    return new Promise((resolve) => {
      const immediate = setImmediate(() => {
        this.#startDeferred = undefined
        resolve()
      })
      // Made in a local, then stored: V8 allocates a closure written straight into a property in
      // its old generation, where it keeps what it captured through young GCs (docs/benchmarks.md).
      const startNow = () => {
        clearImmediate(immediate)
        this.#startDeferred = undefined
        resolve()
      }
      this.#startDeferred = startNow
    })
  }

  /**
   * Makes the wait for approval `requestId` durable (a synced save) before the request is shown.
   * A run resumed in that very wait has it stored already: nothing is written (resuming 1,000
   * parked runs does not rewrite 1,000 checkpoints).
   */
  saveWait(requestId: string): Promise<void> {
    if (this.#resumedWait === requestId) return Promise.resolve()
    this.#resumedWait = undefined
    return this.save()
  }

  /**
   * Records that a call is about to run and waits until that is durable: only then may the tool
   * start. Calls run one at a time and every earlier result is in the transcript, so the ledger
   * holds just this call.
   */
  startCall(call: { callId: string; toolName: string }): Promise<void> {
    this.#ledger = startCall([], { runId: this.runId, ...call, at: this.#options.clock.now() })
    this.#unmasked.clear()
    return this.save()
  }

  /**
   * Records a call's result (saved with the next write; a crash before it leaves the call
   * `started`). When the agent masks tool output, a result the tool produced is stored only once
   * the model's version of it (after the hooks) is in the transcript, and as that version: until
   * then a write stores the run as it stood before the call finished.
   */
  finishCall(callId: string, result: LedgerToolResult): void {
    if (findCall(this.#ledger, callId) === undefined) return
    this.#ledger = finishCall(this.#ledger, callId, result, this.#options.clock.now())
    // Its question (if it asked one) is answered or timed out: no longer pending.
    this.#questions = this.#questions.filter((q) => q.callId !== callId)
    // A hand-off's text is signalbox's own, not the tool's data.
    if (this.#options.masksToolOutput && result.handoff === undefined) {
      // Nothing to write until the hooks ran: the next write comes when the result joins the transcript.
      this.#unmasked.add(callId)
      return
    }
    this.save({ sync: false }).catch(() => {})
  }

  /**
   * Stores the question a call asks and waits until that is durable: only then may it be shown,
   * so an answer can never come for a question no process would resume.
   */
  askQuestion(question: PendingQuestion): Promise<void> {
    this.#questions = [...this.#questions.filter((q) => q.callId !== question.callId), question]
    return this.save()
  }

  /** The question a call had asked when the run was stored, if it is still unanswered. */
  pendingQuestion(callId: string): PendingQuestion | undefined {
    return this.#questions.find((q) => q.callId === callId)
  }

  ledgerEntry(callId: string): LedgerEntry | undefined {
    return findCall(this.#ledger, callId)
  }

  decisionApplied(decision: ApprovalDecision): void {
    this.#applied = [...this.#applied, decision]
  }

  isApplied(requestId: unknown): boolean {
    return typeof requestId === 'string' && this.#applied.some((d) => d.requestId === requestId)
  }

  /** When the run was first stored (its checkpoint's `createdAt`, the agent's clock). */
  get createdAt(): number {
    return this.#createdAt
  }

  /** The last steering message (stream sequence) this run has seen; a resumed consumer starts after it. */
  get steeringCursor(): number | undefined {
    return this.#steeringCursor
  }

  /** The steering consumer got message `seq` (saved with the next checkpoint). */
  steeringConsumed(seq: number): void {
    if (this.#steeringCursor === undefined || seq > this.#steeringCursor) this.#steeringCursor = seq
  }

  /** Waits for every queued write. */
  async settled(): Promise<void> {
    await this.#tail
  }

  /** Stops renewing the lease and refuses further writes (the process is letting go of the run). */
  close(): void {
    this.#finished = true
    if (this.#renewTimer !== undefined) this.#options.clock.clearTimeout(this.#renewTimer)
    this.#abort.abort()
  }

  async #write(sync: boolean): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure
    const actor = this.#actor
    if (actor === undefined || this.#abort.signal.aborted) return
    const { store, runId } = this.#options
    const snapshot = actor.getSnapshot()
    if (snapshot.status === 'stopped') return
    const state = this.#capture(actor, snapshot)
    if (state === undefined) return
    const { length } = state
    const messages = state.snapshot.context.messages
    const signal = this.#abort.signal
    try {
      // The log belongs to a stored run, so a new run is created first, then its first messages
      // appended (a crash in between leaves a run that fails to resume with RUN_TRANSCRIPT_GAP).
      const created = this.#revision === undefined
      if (created) this.#revision = await store.create(this.#checkpoint(state), { signal })
      const batch =
        length > this.#persistedLength
          ? { from: this.#persistedLength, epoch: this.#epoch, messages: messages.slice(this.#persistedLength) }
          : undefined
      const finished = state.snapshot.status !== 'active'
      if (created) {
        // A new run's checkpoint is written already: its first messages are synced on their own.
        if (batch) await store.appendMessages(runId, { ...batch, sync, signal })
      } else {
        const checkpoint = this.#checkpoint(state)
        const revision = this.#revision as number
        if (batch && store.saveWithMessages) {
          // One write: the messages, then the checkpoint that counts them.
          this.#revision = await store.saveWithMessages(checkpoint, { revision, sync, signal, messages: batch })
        } else {
          // The checkpoint's synced save makes the messages durable with it (one round of fsyncs).
          if (batch) await store.appendMessages(runId, { ...batch, sync: false, signal })
          this.#revision = await store.save(checkpoint, { revision, sync, signal })
        }
      }
      this.#persistedLength = length
      this.#lastStored = state
      this.#leaseUntil = this.#writingLease
      if (finished) this.close()
    } catch (error) {
      if (signal.aborted && this.#finished) return
      this.#failure = error
      this.close()
      this.onLost(error)
      throw error
    }
  }

  /**
   * The run as it stands, or, while a call's raw output is in the run's state and its masked
   * version not yet in the transcript, as it stood at the last write (the call then reads as
   * `started`: cut off there, it is outcome unknown, never its raw output stored).
   */
  #capture(actor: JournaledActor, snapshot: JournaledSnapshot): CapturedState | undefined {
    const { context } = snapshot
    let ledger = this.#ledger
    if (this.#unmasked.size > 0) {
      const masked = this.#maskedLedger(context.messages)
      if (masked === undefined) {
        if (snapshot.status === 'active') return this.#lastStored
        // The run ended while a hook ran: its snapshot (never restored) keeps no output of the call.
        const persisted = withoutCallOutput(persistedWithoutTranscript(actor, snapshot))
        ledger = this.#ledger.map((entry) => (this.#unmasked.has(entry.callId) ? startedOnly(entry) : entry))
        return this.#captured(snapshot, persisted, ledger)
      }
      ledger = masked
    }
    return this.#captured(snapshot, persistedWithoutTranscript(actor, snapshot), ledger)
  }

  #captured(snapshot: JournaledSnapshot, persisted: PersistedSnapshot, ledger: LedgerEntry[]): CapturedState {
    return {
      snapshot,
      persisted,
      length: snapshot.context.messages.length,
      ledger,
      applied: this.#applied,
      questions: this.#questions,
      steering: snapshot.context.steering,
      steeringCursor: this.#steeringCursor,
    }
  }

  /** The ledger with every unmasked result replaced by what the model read; undefined while one is not in the transcript yet. */
  #maskedLedger(messages: readonly Message[]): LedgerEntry[] | undefined {
    const ledger: LedgerEntry[] = []
    for (const entry of this.#ledger) {
      if (entry.state !== 'finished' || !this.#unmasked.has(entry.callId)) {
        ledger.push(entry)
        continue
      }
      const read = toolMessageOf(messages, entry.callId)
      if (read === undefined) return undefined
      ledger.push({ ...entry, result: { ...entry.result, output: read.content as string } })
    }
    return ledger
  }

  /** The checkpoint of a captured state, with a fresh lease. */
  #checkpoint({ snapshot, persisted, length, ledger, applied, questions, steering, steeringCursor }: CapturedState): Checkpoint {
    const { context } = snapshot
    const finished = snapshot.status !== 'active'
    const now = this.#options.clock.now()
    const { runId } = this.#options
    const approval = snapshot.hasTag('human')
      ? (context.current?.approval as Checkpoint['pending']['approvals'][number])
      : undefined
    const status = storedStatus(snapshot, approval !== undefined || questions.length > 0)
    this.#writingLease = now + this.#options.leaseMs
    // A root's hand-off is its system's to follow, even after a crash (a child's goes to its parent).
    const handoff =
      status === 'done' && context.handoff && this.#options.runPath.length === 0
        ? { ...context.handoff, pending: true }
        : undefined
    return {
      v: CHECKPOINT_VERSION,
      type: 'run.checkpoint',
      runId,
      agentId: this.#options.agentId,
      runPath: this.#options.runPath,
      status,
      snapshot: persisted,
      transcript: { length },
      usage: {
        promptTokens: context.usage.promptTokens,
        completionTokens: context.usage.completionTokens,
        totalTokens: context.usage.totalTokens,
      },
      pending: { approvals: approval ? [approval] : [], questions: finished ? [] : questions },
      appliedDecisions: applied,
      steering,
      ...(steeringCursor === undefined ? {} : { steeringCursor }),
      ledger,
      // A finished run has no owner: nothing is left to drive (but a root's hand-off to follow).
      ...(finished && !handoff
        ? {}
        : { lease: { owner: this.#options.owner, epoch: this.#epoch, expiresAt: now + this.#options.leaseMs } }),
      ...(handoff ? { handoff } : {}),
      ...(this.#carry() ? { carry: this.#carried } : {}),
      createdAt: this.#createdAt,
      savedAt: now,
    }
  }

  /** What the instrumentations keep with the run, asked of them until they give something. */
  #carry(): RunCarry | undefined {
    if (this.#carried === undefined) {
      const given = this.#options.carry?.()
      if (given !== undefined && Object.keys(given).length > 0) this.#carried = given
    }
    return this.#carried
  }

  /** A parked run keeps its lease: a save every `leaseMs / 3` (through the queue) extends it. */
  #renew(): void {
    if (this.#finished) return
    this.#renewTimer = this.#options.clock.setTimeout(() => {
      this.#renewTimer = undefined
      if (this.#finished) return
      this.save({ sync: false }).then(
        () => this.#renew(),
        () => {},
      )
    }, this.#renewEveryMs())
  }
}

/** Everything a checkpoint holds, taken at one instant so it is consistent. */
interface CapturedState {
  snapshot: JournaledSnapshot
  persisted: PersistedSnapshot
  /** Transcript length (messages of the log that count). */
  length: number
  ledger: LedgerEntry[]
  applied: AppliedDecision[]
  questions: PendingQuestion[]
  steering: JournaledSnapshot['context']['steering']
  steeringCursor: number | undefined
}

/** A finished call as if it had only started (its result not stored). */
function startedOnly(entry: LedgerEntry): LedgerEntry {
  const { callId, toolName, idempotencyKey, startedAt } = entry
  return { state: 'started', callId, toolName, idempotencyKey, startedAt }
}
