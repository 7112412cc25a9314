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
  encodeMessage,
  PROTOCOL_VERSION,
  ProtocolError,
  type Reviewer,
  rejectedDecisionAudit,
  type Subjects,
  systemClock,
} from '@signalbox/core'
import { createRejectionReporter } from './rejections.ts'
import { DurableReplyWaiter } from './reply-waiter.ts'

export interface BusReviewerOptions {
  bus: Bus
  subjects?: Subjects
  /** Where rejected (late, duplicate, mismatched) decisions are recorded. Usually the agent's audit. */
  audit?: AuditLog
  clock?: Clock
}

export interface BusReviewer extends Reviewer {
  /** Stops listening; pending reviews fail (the agent then denies by default). */
  close(): void
}

/**
 * The agent's side of remote approval: the request goes out durably on
 * `approvals.<agent>`, decisions come back on `approvals.<agent>.decisions`. Both travel on the
 * durable path, so a server restart in between loses neither.
 */
export function createBusReviewer(options: BusReviewerOptions): BusReviewer {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const report = createRejectionReporter({ bus, subjects, component: 'agent-approvals', clock })
  const waiter = new DurableReplyWaiter<typeof ApprovalDecisionMessage, ApprovalRequest>({
    bus,
    schema: ApprovalDecisionMessage,
    idOf: (decision) => decision.requestId,
    reportInvalid: report,
    onRejected: ({ reply, reason, context: request }) => {
      report(
        subjects.approvalDecisions(request.agentId),
        JSON.stringify(reply),
        new ProtocolError('PROTOCOL_INVALID_MESSAGE', `Decision rejected: ${reason}`),
      )
      void options.audit?.record(rejectedDecisionAudit({ run: request, request, decision: reply, reason, at: clock.now() }))
    },
  })

  return {
    async review(request, { signal }): Promise<ApprovalDecision> {
      await waiter.listen(subjects.approvalDecisions(request.agentId))
      // Aborted by the caller, or by us when the request could not be sent (nothing may wait for it then).
      const withdrawn = new AbortController()
      const decided = waiter.expect(
        request.requestId,
        request,
        (decision) => decisionMismatch(request, decision),
        AbortSignal.any([signal, withdrawn.signal]),
      )
      // The wait is registered first, so a reviewer that answers at once is not missed.
      decided.catch(() => {})
      const message: ApprovalRequestMessage = { v: PROTOCOL_VERSION, type: 'approval.request', ...request }
      try {
        await bus.durablePublish(subjects.approvals(request.agentId), encodeMessage(message), {
          msgId: request.requestId,
          signal,
        })
      } catch (error) {
        withdrawn.abort(error)
        throw error
      }
      const { v: _v, type: _type, ...decision } = await decided
      return decision
    },
    close() {
      waiter.close(new BusClosedError('the bus reviewer was closed'))
    },
  }
}
