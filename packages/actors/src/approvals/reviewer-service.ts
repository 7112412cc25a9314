import type { ApprovalDecision, ApprovalRequest, Clock, Reviewer } from '@signalbox/core'
import { decideApproval } from '@signalbox/core'
import { type Bus, createSubjects, type Subjects } from '@signalbox/core/bus'
import { decisionMismatch } from '@signalbox/core/internal'
import { ApprovalDecisionMessage, ApprovalRequestMessage, encodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'
import { createRejectionReporter, msgIdPart } from '../requests/rejections.ts'
import { type RequestService, type ServiceMode, serveDurableRequests } from '../requests/request-service.ts'

export interface ReviewerServiceOptions {
  bus: Bus
  /** Decides each request: `policyReviewer(...)`, `terminalReviewer()`, or your own. */
  reviewer: Reviewer
  subjects?: Subjects
  /** Which agents' requests to serve: one agent id, or all (default). */
  agentId?: string
  /** `shared` (default): instances of `group` split the requests. `broadcast`: each sees all. */
  mode?: ServiceMode
  group?: string
  clock?: Clock
  onRequest?(request: ApprovalRequest): void
  onDecision?(request: ApprovalRequest, decision: ApprovalDecision): void
  /** A decision on a request this service saw, made by someone else (or this service). */
  onSettled?(requestId: string, decision: ApprovalDecision): void
  onError?(error: unknown): void
}

export interface ReviewerService extends RequestService {}

/**
 * A reviewer on the bus: takes approval requests from `approvals.<agent>`, asks its `reviewer`,
 * and stores the decision durably on `approvals.<agent>.decisions`. It also watches decisions
 * so a request another reviewer settled is dropped here.
 */
export function serveReviewer(options: ReviewerServiceOptions): ReviewerService {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const report = createRejectionReporter({ bus, subjects, component: 'reviewer', clock: options.clock })
  const agentToken = options.agentId ?? '*'
  const requestSubject = `${subjects.prefix}.approvals.${agentToken}`
  const decisionSubject = `${subjects.prefix}.approvals.${agentToken}.decisions`

  return serveDurableRequests({
    bus,
    subject: requestSubject,
    schema: ApprovalRequestMessage,
    idOf: (request) => request.requestId,
    deadlineOf: (request) => request.deadline,
    mode: options.mode ?? 'shared',
    group: options.group ?? 'reviewers',
    report,
    settlements: {
      subject: decisionSubject,
      schema: ApprovalDecisionMessage,
      idOf: (decision) => decision.requestId,
      // A forged decision (another call, other arguments) must not stop people from reviewing.
      matches: (request, decision) => decisionMismatch(request as ApprovalRequestMessage, decision) === undefined,
      onSettled: (id, { v: _v, type: _type, ...decision }) => options.onSettled?.(id, decision),
    },
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
    decide: async (message, signal) => {
      const { v: _v, type: _type, ...request } = message
      options.onRequest?.(request)
      const decision = await options.reviewer.review(request, { signal })
      return { request, decision }
    },
    publish: async (_message, { request, decision }, signal) => {
      // Quote what was shown; a reviewer cannot re-bind its decision to another call.
      const reply: ApprovalDecisionMessage = {
        v: PROTOCOL_VERSION,
        type: 'approval.decision',
        ...decideApproval(request, decision, decision.reviewer, decision.decidedAt),
        // Approve with edited arguments: the agent validates them and runs the edited call.
        ...(decision.arguments === undefined ? {} : { arguments: decision.arguments }),
      }
      await bus.durablePublish(subjects.approvalDecisions(request.agentId), encodeMessage(reply), {
        msgId: msgIdPart(`decision-${request.requestId}-${decision.reviewer}`),
        signal,
      })
      options.onDecision?.(request, decision)
    },
  })
}
