import {
  type ApprovalDecision,
  type ApprovalRequest,
  type AuditLog,
  type Clock,
  type Reviewer,
  systemClock,
} from '@signalbox/core'
import { type Bus, BusClosedError, createSubjects, type Subjects } from '@signalbox/core/bus'
import { decisionMismatch, rejectedDecisionAudit } from '@signalbox/core/internal'
import {
  type ApprovalAliveMessage,
  ApprovalDecisionMessage,
  type ApprovalRequestMessage,
  encodeMessage,
  PROTOCOL_VERSION,
} from '@signalbox/core/protocol'
import { DurableRequester } from '../requests/durable-request.ts'
import { createRejectionReporter } from '../requests/rejections.ts'

export interface RemoteReviewerOptions {
  bus: Bus
  subjects?: Subjects
  /** Where rejected (late, duplicate, mismatched) decisions are recorded. Usually the agent's audit. */
  audit?: AuditLog
  clock?: Clock
  /**
   * While a request waits, publish `approval.alive` for it at this interval, so that reviewer
   * services withdraw it (as orphaned) once this process is gone. Default 2 s. `false` for an
   * agent with a run store: its runs resume in another process, and their requests stay open.
   */
  heartbeatMs?: number | false
}

/** See `RemoteReviewerOptions.heartbeatMs`. */
export const DEFAULT_APPROVAL_HEARTBEAT_MS = 2_000

export interface RemoteReviewer extends Reviewer {
  /** Stops listening; pending reviews fail (the agent then denies by default). */
  close(): void
}

/**
 * The agent's side of remote approval: the request goes out durably on
 * `approvals.<agent>`, decisions come back on `approvals.<agent>.decisions`. Both travel on the
 * durable path, so a server restart in between loses neither.
 */
export function remoteReviewer(options: RemoteReviewerOptions): RemoteReviewer {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const report = createRejectionReporter({ bus, subjects, component: 'agent-approvals', clock })
  const requester = new DurableRequester<typeof ApprovalDecisionMessage, ApprovalRequest>({
    bus,
    schema: ApprovalDecisionMessage,
    idOf: (decision) => decision.requestId,
    replySubjectOf: (request) => subjects.approvalDecisions(request.agentId),
    replyName: 'Decision',
    report,
    onRejected: ({ reply, reason, context: request }) => {
      void options.audit?.record(rejectedDecisionAudit({ run: request, request, decision: reply, reason, at: clock.now() }))
    },
  })

  const heartbeatMs = options.heartbeatMs === false ? undefined : (options.heartbeatMs ?? DEFAULT_APPROVAL_HEARTBEAT_MS)
  const heartbeats = heartbeatMs === undefined ? undefined : new ApprovalHeartbeats(bus, subjects, clock, heartbeatMs)

  /** Requests stored by `open`, waiting for `review` to take their decision. */
  const opened = new Map<string, Promise<ApprovalDecision>>()
  const send = async (request: ApprovalRequest, signal: AbortSignal): Promise<{ decided: Promise<ApprovalDecision> }> => {
    const message: ApprovalRequestMessage = {
      v: PROTOCOL_VERSION,
      type: 'approval.request',
      ...request,
      ...(heartbeatMs !== undefined ? { heartbeatMs } : {}),
    }
    const { reply } = await requester.send({
      id: request.requestId,
      context: request,
      subject: subjects.approvals(request.agentId),
      message,
      check: (decision) => decisionMismatch(request, decision),
      signal,
    })
    const decided = reply.then(({ v: _v, type: _type, ...decision }) => decision)
    decided.catch(() => {})
    if (heartbeats) {
      heartbeats.add(request)
      const stop = () => heartbeats.remove(request)
      decided.then(stop, stop)
    }
    return { decided }
  }

  return {
    async open(request, { signal }): Promise<void> {
      const { decided } = await send(request, signal)
      opened.set(request.requestId, decided)
      // Kept until `review` takes it (a decision may already be in), or the wait is dropped.
      signal.addEventListener('abort', () => opened.delete(request.requestId), { once: true })
    },
    async review(request, { signal }): Promise<ApprovalDecision> {
      const decided = opened.get(request.requestId)
      opened.delete(request.requestId)
      return decided ?? (await send(request, signal)).decided
    },
    close() {
      heartbeats?.close()
      requester.close(new BusClosedError('the bus reviewer was closed'))
    },
  }
}

/**
 * `approval.alive` for every request this process waits on, one message per agent per interval:
 * the reviewer services' proof that someone will still apply the decision.
 */
class ApprovalHeartbeats {
  readonly #pending = new Map<string, Set<string>>()
  readonly #bus: Bus
  readonly #subjects: Subjects
  readonly #clock: Clock
  readonly #intervalMs: number
  #timer: unknown

  constructor(bus: Bus, subjects: Subjects, clock: Clock, intervalMs: number) {
    this.#bus = bus
    this.#subjects = subjects
    this.#clock = clock
    this.#intervalMs = intervalMs
  }

  add(request: ApprovalRequest): void {
    let ids = this.#pending.get(request.agentId)
    if (ids === undefined) {
      ids = new Set()
      this.#pending.set(request.agentId, ids)
    }
    ids.add(request.requestId)
    // At once: a reviewer may be looking at it already.
    this.#beat(request.agentId)
    this.#schedule()
  }

  remove(request: ApprovalRequest): void {
    const ids = this.#pending.get(request.agentId)
    ids?.delete(request.requestId)
    if (ids?.size === 0) this.#pending.delete(request.agentId)
  }

  close(): void {
    this.#pending.clear()
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #schedule(): void {
    if (this.#timer !== undefined) return
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined
      for (const agentId of this.#pending.keys()) this.#beat(agentId)
      if (this.#pending.size > 0) this.#schedule()
    }, this.#intervalMs)
  }

  #beat(agentId: string): void {
    const ids = this.#pending.get(agentId)
    if (ids === undefined || ids.size === 0) return
    const message: ApprovalAliveMessage = {
      v: PROTOCOL_VERSION,
      type: 'approval.alive',
      agentId,
      requestIds: [...ids],
      at: this.#clock.now(),
    }
    try {
      this.#bus.publish(this.#subjects.alive(agentId), encodeMessage(message))
    } catch {
      // Lossy by design: a missed beat or two is what the reviewer's margin (three beats) is for.
    }
  }
}
