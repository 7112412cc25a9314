import {
  AbortedError,
  type Agent,
  type Clock,
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
import { watchSilence } from '../silence.ts'
import { HEARTBEATS_PER_LEASE } from './remote-run.ts'
import type { RunTreeLedger } from './tree-budget.ts'

/** How long `drain()` waits for the runs it hosts to publish their (cancelled) results. */
const CLOSE_GRACE_MS = 3_000

export interface RunHostOptions {
  bus: Bus
  subjects: Subjects
  hostId: string
  clock: Clock
  ledger: RunTreeLedger
  /** Aborted when the host shuts down: no new runs, and the hosted ones are cancelled. */
  stopping: AbortSignal
}

/**
 * The host's side of remote runs: starts the requested run, replies at once, publishes the
 * result when it ends. Each run holds a lease that the parent's heartbeats renew; a parent that
 * goes silent for a whole lease (crashed, cut off) gets its child cancelled, so none is orphaned.
 */
export class RunHost {
  readonly #options: RunHostOptions
  /** Runs started for remote parents, until their result is published. */
  readonly #hosted = new Set<Promise<unknown>>()

  constructor(options: RunHostOptions) {
    this.#options = options
  }

  /** Runs hosted right now. */
  get size(): number {
    return this.#hosted.size
  }

  accept(agent: Agent, message: BusMessage): void {
    const { bus, subjects, hostId, clock, ledger, stopping } = this.#options
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
    if (stopping.aborted) {
      message.respond(
        encodeMessage(errorMessage({ code: 'HOST_STOPPING', message: `Host ${hostId} is shutting down.` }, request.runId)),
      )
      return
    }
    // The host holds its own limit too: a parent elsewhere may have a deeper one.
    if (request.runPath.length > ledger.limits.maxDepth) {
      const refusal = {
        code: 'TREE_DEPTH_EXCEEDED',
        message: `Delegation is ${request.runPath.length} levels deep; this host's limit is ${ledger.limits.maxDepth}.`,
      }
      message.respond(encodeMessage(errorMessage(refusal, request.runId)))
      return
    }
    const cancelled = new AbortController()
    const rootRunId = request.runPath[0] ?? request.runId
    const tree = ledger.open(rootRunId)
    const check = ledger.check(rootRunId)
    let handle: RunHandle
    try {
      handle = agent.start(request.input as string | Message[], {
        ...(check ? { budget: check } : {}),
        runId: request.runId,
        runPath: request.runPath,
        ...(request.agentPath ? { agentPath: request.agentPath } : {}),
        ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
        ...(request.maxTurns ? { maxTurns: request.maxTurns } : {}),
        ...(request.maxTokens ? { maxTokens: request.maxTokens } : {}),
        signal: cancelled.signal,
      })
    } catch (error) {
      ledger.leave(rootRunId)
      message.respond(encodeMessage(errorMessage(serializeError(error), request.runId)))
      return
    }
    tree.handles.add(handle)
    // Orphan guard: no heartbeat from the parent for a whole lease and the child stops.
    const lease = startLease(clock, request.leaseMs, () =>
      cancelled.abort(new AbortedError('the parent stopped sending heartbeats (lease expired)')),
    )
    const heartbeats = bus.subscribe(subjects.runHeartbeat(request.runId), (beat) => {
      const parsed = decodeMessage(beat.data, RunHeartbeatMessage, { maxBytes: bus.maxPayload })
      if (parsed.ok) lease.renew()
    })
    const stopOnClose = () => cancelled.abort(new AbortedError('the host is shutting down'))
    // One listener on the host's long-lived signal for all its runs, not one per run.
    const stopWatching = whenAborted(stopping, stopOnClose)
    const accepted: RunAcceptedMessage = {
      v: PROTOCOL_VERSION,
      type: 'run.accepted',
      runId: request.runId,
      agentId: agent.id,
      hostId,
    }
    message.respond(encodeMessage(accepted))

    const publish = (result: RunResult, error?: SerializedError) => {
      const out: RunResultMessage = {
        v: PROTOCOL_VERSION,
        type: 'run.result',
        runId: request.runId,
        agentId: agent.id,
        status: result.status,
        output: result.output,
        ...(error ? { error: { code: error.code, message: error.message } } : {}),
        turns: result.turns,
        usage: result.usage,
        ...(result.handoff ? { handoff: result.handoff as RunResultMessage['handoff'] } : {}),
        hostId,
      }
      return bus
        .durablePublish(subjects.runResult(request.runId), encodeMessage(out), { msgId: `result-${request.runId}` })
        .catch(() => {})
    }
    const finished = handle.result
      .then(
        (result) => publish(result),
        (error) => {
          const result = (error as { result?: RunResult }).result
          return publish(result ?? emptyResult(request.runId, 'failed'), result?.error ?? serializeError(error))
        },
      )
      .finally(() => {
        lease.stop()
        heartbeats.unsubscribe()
        ledger.leave(rootRunId, handle)
        stopWatching()
        this.#hosted.delete(finished)
      })
    this.#hosted.add(finished)
  }

  /** Waits for the hosted runs (cancelled by `stopping`) to publish their results, for a grace period at most. */
  async drain(): Promise<void> {
    const { clock } = this.#options
    const hosted = Promise.allSettled([...this.#hosted])
    let timer: unknown
    await Promise.race([hosted, new Promise<void>((resolve) => (timer = clock.setTimeout(() => resolve(), CLOSE_GRACE_MS)))])
    clock.clearTimeout(timer)
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
