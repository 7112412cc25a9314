/**
 * A host taking over stored runs: on start, the runs of its agents that it owned before a
 * restart, and, every `intervalMs`, the runs whose owner's lease expired (a crashed host). Each
 * run is claimed with the store's compare-and-set at the revision that was listed, so of several
 * hosts scanning at once exactly one wins a run; the winner hands it to its agent's `resume`.
 */
import { type Clock, ConfigError, systemClock } from '@signalbox/core'
import { type RunStore, RunStoreError, type StoredRun } from '@signalbox/core/store'

/** An agent that can continue a stored run (`agent.resume`). The run is already claimed for this host. */
export interface ResumableAgent {
  readonly id: string
  resume?(runId: string, options: { signal: AbortSignal }): unknown
  /**
   * Follows the hand-off a finished root run left pending (its process died before it started the
   * next agent). The run is already claimed for this host. Without it such runs are left alone.
   */
  followHandoff?(runId: string, options: { signal: AbortSignal }): unknown
  /** The runs in flight in this process (`agent.runs`): never claimed again (that would fence them off). */
  readonly runs?: { has(runId: string): boolean }
}

export type TakeoverEvent =
  /** This host now owns the run (`from`: the previous owner whose lease had expired, if any). */
  | { type: 'claimed'; runId: string; agentId: string; from: string | undefined; epoch: number }
  /** Another host claimed it first (or its owner renewed in time): nothing to do. */
  | { type: 'lost'; runId: string; agentId: string; code: string }
  /** The agent has no `resume`: the run is left for a host that can continue it. */
  | { type: 'not-resumable'; runId: string; agentId: string }
  /** A stored run could not be read (reported once per run and error); the others go on. */
  | { type: 'unreadable'; runId: string; code: string; message: string }
  | { type: 'error'; runId: string | undefined; error: unknown }

export interface RunTakeoverOptions {
  store: RunStore
  /** This host's id: the lease owner it writes. Stable across restarts of the same host. */
  hostId: string
  /** The lease a claim takes; the resumed run renews it from then on. */
  leaseMs: number
  /** The agents this host serves (read at every scan). */
  agents(): Iterable<ResumableAgent>
  /** Between scans. Default `leaseMs / 2`. */
  intervalMs?: number
  clock?: Clock
  onEvent?(event: TakeoverEvent): void
}

export interface ScanResult {
  claimed: string[]
  lost: string[]
}

/** Lost the compare-and-set, or the owner's lease is still running: another host has it. */
const LOST_CODES = new Set(['RUN_REVISION_CONFLICT', 'RUN_LEASE_HELD', 'RUN_NOT_FOUND'])

export class RunTakeover {
  readonly #options: RunTakeoverOptions
  readonly #clock: Clock
  readonly #stop = new AbortController()
  #timer: unknown
  #scanning: Promise<ScanResult> | undefined
  /** Unreadable runs already reported (run and error code): reported once, not at every scan. */
  readonly #reported = new Set<string>()
  /** Runs this host claimed whose resume has not settled yet: a scan meanwhile must not claim them again. */
  readonly #resuming = new Set<string>()

  constructor(options: RunTakeoverOptions) {
    if (!(options.leaseMs > 0)) throw new ConfigError('leaseMs must be positive', { leaseMs: options.leaseMs })
    this.#options = options
    this.#clock = options.clock ?? systemClock
  }

  /** Scans at once (the runs this host owned before a restart, and orphans), then every interval. */
  start(): Promise<ScanResult> {
    const first = this.scan(this.#stop.signal)
    const again = () => {
      if (this.#stop.signal.aborted) return
      this.#timer = this.#clock.setTimeout(
        () => {
          void this.scan(this.#stop.signal).finally(again)
        },
        this.#options.intervalMs ?? Math.max(1, Math.floor(this.#options.leaseMs / 2)),
      )
    }
    void first.finally(again)
    return first
  }

  stop(): void {
    this.#stop.abort()
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
  }

  /** One pass; never throws (errors are events). Concurrent calls share the pass in progress. */
  scan(signal: AbortSignal): Promise<ScanResult> {
    this.#scanning ??= this.#scan(signal).finally(() => {
      this.#scanning = undefined
    })
    return this.#scanning
  }

  async #scan(signal: AbortSignal): Promise<ScanResult> {
    const result: ScanResult = { claimed: [], lost: [] }
    const agents = new Map<string, ResumableAgent>()
    for (const agent of this.#options.agents()) agents.set(agent.id, agent)
    if (agents.size === 0) return result
    let runs: StoredRun[]
    try {
      // Finished runs too: a root's hand-off its process did not follow (`handoff.pending`).
      const listing = await this.#options.store.list({ status: ['running', 'waiting', 'done'], signal })
      for (const error of listing.errors) {
        const key = `${error.code} ${error.runId}`
        if (this.#reported.has(key)) continue
        this.#reported.add(key)
        this.#emit({ type: 'unreadable', runId: error.runId, code: error.code, message: error.message })
      }
      runs = listing.runs
    } catch (error) {
      if (!signal.aborted) this.#emit({ type: 'error', runId: undefined, error })
      return result
    }
    for (const run of runs) {
      if (signal.aborted) break
      const { runId, agentId, lease } = run.checkpoint
      const agent = agents.get(agentId)
      if (agent === undefined) continue
      const handoff = run.checkpoint.status === 'done'
      if (handoff && (run.checkpoint.handoff?.pending !== true || typeof agent.followHandoff !== 'function')) continue
      const mine = lease?.owner === this.#options.hostId
      if (lease !== undefined && !mine && lease.expiresAt > this.#clock.now()) continue
      // This host's own pending hand-off is being followed by the run that handed over, until its lease is out.
      if (handoff && lease !== undefined && lease.expiresAt > this.#clock.now()) continue
      // Running here already (or being resumed): its journal renews the lease; a claim would make its next write lose.
      if (agent.runs?.has(runId) || this.#resuming.has(runId)) continue
      if (!handoff && typeof agent.resume !== 'function') {
        this.#emit({ type: 'not-resumable', runId, agentId })
        continue
      }
      try {
        // At the listed revision: if anyone wrote since (another host claimed it), this loses.
        const claimed = await this.#options.store.claim(runId, {
          owner: this.#options.hostId,
          leaseMs: this.#options.leaseMs,
          revision: run.revision,
          signal,
        })
        result.claimed.push(runId)
        this.#emit({
          type: 'claimed',
          runId,
          agentId,
          from: mine ? undefined : lease?.owner,
          epoch: claimed.checkpoint.lease?.epoch ?? 0,
        })
      } catch (error) {
        if (RunStoreError.is(error) && LOST_CODES.has(error.code)) {
          result.lost.push(runId)
          this.#emit({ type: 'lost', runId, agentId, code: error.code })
        } else if (!signal.aborted) {
          this.#emit({ type: 'error', runId, error })
        }
        continue
      }
      this.#resuming.add(runId)
      try {
        // Claimed for this host: the agent's own claim is a renewal.
        const go = handoff ? agent.followHandoff?.bind(agent) : agent.resume?.bind(agent)
        Promise.resolve(go?.(runId, { signal }))
          .catch((error: unknown) => this.#emit({ type: 'error', runId, error }))
          .finally(() => this.#resuming.delete(runId))
      } catch (error) {
        this.#resuming.delete(runId)
        this.#emit({ type: 'error', runId, error })
      }
    }
    return result
  }

  #emit(event: TakeoverEvent): void {
    try {
      this.#options.onEvent?.(event)
    } catch {
      // a listener's failure is not the takeover's
    }
  }
}
