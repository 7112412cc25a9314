import {
  type ApprovalDecision,
  ApprovalDecisionMessage,
  type ApprovalRequest,
  type ApprovalRequestMessage,
  type AuditLog,
  type Bus,
  BusClosedError,
  type Clock,
  createSubjects,
  decisionMismatch,
  PROTOCOL_VERSION,
  type Reviewer,
  rejectedDecisionAudit,
  type Subjects,
  systemClock,
} from '@signalbox/core'
import { DurableRequester } from '../requests/durable-request.ts'
import { createRejectionReporter } from '../requests/rejections.ts'

export interface RemoteReviewerOptions {
  bus: Bus
  subjects?: Subjects
  /** Where rejected (late, duplicate, mismatched) decisions are recorded. Usually the agent's audit. */
  audit?: AuditLog
  clock?: Clock
}

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

  /** Requests stored by `open`, waiting for `review` to take their decision. */
  const opened = new Map<string, Promise<ApprovalDecision>>()
  const send = async (request: ApprovalRequest, signal: AbortSignal): Promise<{ decided: Promise<ApprovalDecision> }> => {
    const message: ApprovalRequestMessage = { v: PROTOCOL_VERSION, type: 'approval.request', ...request }
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
      requester.close(new BusClosedError('the bus reviewer was closed'))
    },
  }
}
