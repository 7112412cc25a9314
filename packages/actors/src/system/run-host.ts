import {
  AbortedError,
  type Agent,
  type Clock,
  ErrorCode,
  type Message,
  type RunHandle,
  type RunResult,
  type SerializedError,
} from '@signalbox/core'
import type { Bus, BusMessage, Subjects } from '@signalbox/core/bus'
import { serializeError, whenAborted } from '@signalbox/core/internal'
import {
  decodeMessage,
  encodeMessage,
  errorMessage,
  PROTOCOL_VERSION,
  type RunAcceptedMessage,
  RunHeartbeatMessage,
  RunRequestMessage,
  type RunResultMessage,
} from '@signalbox/core/protocol'
import type { RunStore } from '@signalbox/core/store'
import { watchSilence } from '../silence.ts'
import { storedAnswer } from './local-reattach.ts'
import { HEARTBEATS_PER_LEASE } from './remote-run.ts'
import type { RunTreeLedger } from './tree-budget.ts'

/** How long `drain()` waits for the runs it hosts to publish their (cancelled) results. */
const CLOSE_GRACE_MS = 3_000

/** How long a check of the store may take before the request is answered without it. */
const STORE_CHECK_MS = 5_000

export interface RunHostOptions {
  bus: Bus
  subjects: Subjects
  hostId: string
  clock: Clock
  ledger: RunTreeLedger
  /** Aborted when the host shuts down: no new runs, and the hosted ones are cancelled. */
  stopping: AbortSignal
  /** Where this host's agents keep their runs: a parent re-attaching finds a run stored here (on whichever host). */
  store?: RunStore | undefined
  /** The lease of a run this host took over from another (its parent's heartbeats renew it). */
  leaseMs: number
}

interface Hosted {
  agentId: string
  finished: Promise<unknown>
  /** The run's parent is in this process: no heartbeats will come, the lease is off. */
  dropLease(): void
}

/**
 * The host's side of remote runs: starts the requested run, replies at once, publishes the
 * result when it ends. Each run holds a lease that the parent's heartbeats renew; a parent that
 * goes silent for a whole lease (crashed, cut off) gets its child cancelled, so none is orphaned.
 * A heartbeat is a request: the host running the run answers it, so a parent (alive, or resumed
 * after a crash) always finds out where its child runs, whichever host took it over.
 */
export class RunHost {
  readonly #options: RunHostOptions
  /** Runs hosted for parents elsewhere (started here or taken over), by run id, until their result is published. */
  readonly #hosted = new Map<string, Hosted>()

  constructor(options: RunHostOptions) {
    this.#options = options
  }

  /** Runs hosted right now. */
  get size(): number {
    return this.#hosted.size
  }

  accept(agent: Agent<unknown>, message: BusMessage): void {
    const { bus, hostId, ledger, stopping } = this.#options
    const decoded = decodeMessage(message.data, RunRequestMessage, { maxBytes: bus.maxPayload })
    if (!decoded.ok) {
      message.respond(encodeMessage(errorMessage(decoded.error.toJSON())))
      return
    }
    const request = decoded.value
    if (request.agentId !== agent.id) {
      message.respond(
        encodeMessage(errorMessage({ code: 'AGENT_UNKNOWN', message: `This subject serves "${agent.id}".` }, request.runId)),
      )
      return
    }
    // The same run asked again (a parent re-attaching, or a retried request): it runs here already.
    if (this.#hosted.has(request.runId) || agent.runs.has(request.runId)) {
      message.respond(encodeMessage(this.#accepted(request.runId, agent.id, hostId)))
      return
    }
    if (request.check) {
      void this.#answerCheck(agent, request.runId, message)
      return
    }
    if (stopping.aborted) {
      message.respond(
        encodeMessage(errorMessage({ code: 'HOST_STOPPING', message: `Host ${hostId} is shutting down.` }, request.runId)),
      )
      return
    }
    // The host holds its own limit too: the root's may be higher or lower (the lower holds).
    const maxDepth = Math.min(ledger.limits.maxDepth, request.limits?.maxDepth ?? Number.POSITIVE_INFINITY)
    if (request.runPath.length > maxDepth) {
      const whose = maxDepth < ledger.limits.maxDepth ? 'the run tree’s limit' : `this host's limit`
      const refusal = {
        code: 'TREE_DEPTH_EXCEEDED',
        message: `Delegation is ${request.runPath.length} levels deep; ${whose} is ${maxDepth}.`,
      }
      message.respond(encodeMessage(errorMessage(refusal, request.runId)))
      return
    }
    const cancelled = new AbortController()
    const rootRunId = request.runPath[0] ?? request.runId
    const tree = ledger.open(rootRunId, request.limits)
    ledger.trackSubtree(request.runId)
    ledger.countRuns(request.runPath, 1)
    const check = ledger.check(rootRunId)
    let handle: RunHandle<unknown>
    try {
      handle = agent.start(request.input as string | Message[], {
        ...(check ? { budget: check } : {}),
        runId: request.runId,
        runPath: request.runPath,
        ...(request.agentPath ? { agentPath: request.agentPath } : {}),
        ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
        ...(request.maxTurns ? { maxTurns: request.maxTurns } : {}),
        ...(request.maxTokens ? { maxTokens: request.maxTokens } : {}),
        ...(request.limits ? { treeLimits: request.limits } : {}),
        signal: cancelled.signal,
      })
    } catch (error) {
      ledger.subtreeRuns(request.runId)
      ledger.leave(rootRunId)
      message.respond(encodeMessage(errorMessage(serializeError(error), request.runId)))
      return
    }
    tree.handles.add(handle)
    this.#host(agent, handle, { rootRunId, leaseMs: request.leaseMs, cancelled })
    message.respond(encodeMessage(this.#accepted(request.runId, agent.id, hostId)))
  }

  /**
   * A run of a remote parent that this host resumed from the store (taken over from a crashed
   * host, or its own before a restart): its parent hears its heartbeats answered here and its
   * result published, as if it had started here. `cancelled` stops it (lease expired, host closing).
   */
  adopt(agent: Agent<unknown>, handle: RunHandle<unknown>, cancelled: AbortController): void {
    const { runPath, treeLimits } = handle.actor.getSnapshot().context.run
    const rootRunId = runPath[0] ?? handle.runId
    // The limits its parent sent are kept with the run: this host holds its children to them too.
    const tree = this.#options.ledger.open(rootRunId, treeLimits)
    this.#options.ledger.trackSubtree(handle.runId)
    this.#options.ledger.countRuns(runPath, 1)
    tree.handles.add(handle)
    this.#host(agent, handle, { rootRunId, leaseMs: this.#options.leaseMs, cancelled })
  }

  /** The run's parent is in this process (it re-attached locally): it sends no heartbeats, so no lease. */
  localParent(runId: string): void {
    this.#hosted.get(runId)?.dropLease()
  }

  /** Waits for the hosted runs (cancelled by `stopping`) to publish their results, for a grace period at most. */
  async drain(): Promise<void> {
    const { clock } = this.#options
    const hosted = Promise.allSettled([...this.#hosted.values()].map((run) => run.finished))
    let timer: unknown
    await Promise.race([hosted, new Promise<void>((resolve) => (timer = clock.setTimeout(() => resolve(), CLOSE_GRACE_MS)))])
    clock.clearTimeout(timer)
  }

  /** A re-attaching parent asks whether the run exists: stored (on whichever host runs it), or not at all. */
  async #answerCheck(agent: Agent<unknown>, runId: string, message: BusMessage): Promise<void> {
    const { store, hostId, clock } = this.#options
    const notFound = () => {
      message.respond(
        encodeMessage(
          errorMessage({ code: 'RUN_NOT_FOUND', message: `Host ${hostId} neither runs nor stores run ${runId}.` }, runId),
        ),
      )
    }
    if (store === undefined) return notFound()
    const limit = new AbortController()
    const timer = clock.setTimeout(() => limit.abort(), STORE_CHECK_MS)
    try {
      const stored = await store.load(runId, { signal: limit.signal })
      if (stored === undefined || stored.checkpoint.agentId !== agent.id) return notFound()
      const { checkpoint } = stored
      if (checkpoint.status === 'parked') {
        const why = checkpoint.parked ? `${checkpoint.parked.code}: ${checkpoint.parked.message}` : 'its state cannot be loaded'
        const refusal = { code: 'RUN_NOT_RESUMABLE', message: `Run ${runId} is parked (${why}): a person must look at it.` }
        message.respond(encodeMessage(errorMessage(refusal, runId)))
        return
      }
      // Ended: its result is published again (its host may have died before publishing it).
      const ended = await storedAnswer(store, runId, limit.signal)
      if (ended) await this.#publish(agent.id, ended, ended.error)
      // Stored: its owner runs it, or a host will take it over once the owner's lease is out.
      message.respond(encodeMessage(this.#accepted(runId, agent.id, checkpoint.lease?.owner ?? hostId)))
    } catch (error) {
      message.respond(encodeMessage(errorMessage(serializeError(error), runId)))
    } finally {
      clock.clearTimeout(timer)
    }
  }

  /** The run's `run.result`, durably, once (`Nats-Msg-Id: result-<runId>`); a failure is the lease's to cover. */
  #publish(agentId: string, result: RunResult<unknown>, error?: SerializedError, runs?: number): Promise<unknown> {
    const { bus, subjects, hostId } = this.#options
    const out: RunResultMessage = {
      v: PROTOCOL_VERSION,
      type: 'run.result',
      runId: result.runId,
      agentId,
      status: result.status,
      output: typeof result.output === 'string' ? result.output : JSON.stringify(result.output ?? ''),
      ...(error ? { error: { code: error.code, message: error.message } } : {}),
      turns: result.turns,
      usage: result.usage,
      ...(result.handoff ? { handoff: result.handoff as RunResultMessage['handoff'] } : {}),
      hostId,
      ...(runs === undefined ? {} : { runs }),
    }
    return bus
      .durablePublish(subjects.runResult(result.runId), encodeMessage(out), { msgId: `result-${result.runId}` })
      .catch(() => {})
  }

  #accepted(runId: string, agentId: string, hostId: string): RunAcceptedMessage {
    return { v: PROTOCOL_VERSION, type: 'run.accepted', runId, agentId, hostId }
  }

  /** Watches a hosted run: its lease, its parent's heartbeats (answered), its end (published). */
  #host(
    agent: Agent<unknown>,
    handle: RunHandle<unknown>,
    run: { rootRunId: string; leaseMs: number | undefined; cancelled: AbortController },
  ): void {
    const { bus, subjects, hostId, clock, ledger, stopping } = this.#options
    const { runId } = handle
    const { rootRunId, cancelled } = run
    // Orphan guard: no heartbeat from the parent for a whole lease and the child stops.
    const lease = startLease(clock, run.leaseMs, () =>
      cancelled.abort(new AbortedError('the parent stopped sending heartbeats (lease expired)')),
    )
    const heartbeats = bus.subscribe(subjects.runHeartbeat(runId), (beat) => {
      const parsed = decodeMessage(beat.data, RunHeartbeatMessage, { maxBytes: bus.maxPayload })
      if (!parsed.ok) return
      lease.renew()
      // Where the run is, for a parent that looks for it (after a crash, a takeover).
      if (beat.reply) beat.respond(encodeMessage(this.#accepted(runId, agent.id, hostId)))
    })
    const stopOnClose = () => cancelled.abort(new AbortedError('the host is shutting down'))
    // One listener on the host's long-lived signal for all its runs, not one per run.
    const stopWatching = whenAborted(stopping, stopOnClose)

    const publish = (result: RunResult<unknown>, error?: SerializedError) => {
      // Another host took the run over (its claim moved the stored revision): that host runs it
      // now and publishes its result. Published here, this run's failure would win the result's
      // de-duplication (one `result-<runId>` message) and the parent would read it.
      if (lostToAnotherHost(error ?? result.error)) return
      return this.#publish(agent.id, result, error, ledger.subtreeRuns(runId))
    }
    const finished = handle.result
      .then(
        (result) => publish(result),
        (error) => {
          const result = (error as { result?: RunResult }).result
          return publish(result ?? emptyResult(runId, 'failed'), result?.error ?? serializeError(error))
        },
      )
      .finally(() => {
        lease.stop()
        heartbeats.unsubscribe()
        ledger.leave(rootRunId, handle)
        stopWatching()
        if (this.#hosted.get(runId)?.finished === finished) this.#hosted.delete(runId)
      })
    this.#hosted.set(runId, { agentId: agent.id, finished, dropLease: () => lease.stop() })
  }
}

/**
 * A lease of `ms` on `clock` (none when `ms` is absent or 0): `onExpire` runs unless renewed in
 * time. The parent renews it HEARTBEATS_PER_LEASE times per lease; a stalled host looks again a
 * heartbeat later rather than cancel a child whose parent is alive (`watchSilence`).
 */
function startLease(clock: Clock, ms: number | undefined, onExpire: () => void): { renew(): void; stop(): void } {
  if (!ms) return { renew() {}, stop() {} }
  const watch = watchSilence(clock, { limitMs: ms, recheckMs: ms / HEARTBEATS_PER_LEASE }, onExpire)
  return { renew: watch.heard, stop: watch.stop }
}

/** The store's refusals of a write by a host whose run another host has claimed (never sent on the wire). */
const LOST_TO_ANOTHER_HOST = new Set<string>([ErrorCode.RUN_REVISION_CONFLICT, ErrorCode.RUN_LEASE_HELD])

/** A run that ended because another host claimed it: its store refused this host's next write. */
function lostToAnotherHost(error: { code: string } | undefined): boolean {
  return error !== undefined && LOST_TO_ANOTHER_HOST.has(error.code)
}

function emptyResult(runId: string, status: 'failed' | 'cancelled'): RunResult {
  return {
    runId,
    status,
    output: '',
    stopReason: undefined,
    error: undefined,
    turns: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    messages: [],
    pendingSteering: [],
  }
}
