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
import { ApprovalDecisionMessage, type ApprovalRequestMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'
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

  return {
    async review(request, { signal }): Promise<ApprovalDecision> {
      const message: ApprovalRequestMessage = { v: PROTOCOL_VERSION, type: 'approval.request', ...request }
      const {
        v: _v,
        type: _type,
        ...decision
      } = await requester.request({
        id: request.requestId,
        context: request,
        subject: subjects.approvals(request.agentId),
        message,
        check: (decision) => decisionMismatch(request, decision),
        signal,
      })
      return decision
    },
    close() {
      requester.close(new BusClosedError('the bus reviewer was closed'))
    },
  }
}
