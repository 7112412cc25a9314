import { randomBytes } from 'node:crypto'
import type { ApprovalDecision, ApprovalRequest, Clock, Reviewer } from '@signalbox/core'
import { decideApproval, systemClock } from '@signalbox/core'
import { type Bus, BusError, createSubjects, type Subjects } from '@signalbox/core/bus'
import { decisionMismatch } from '@signalbox/core/internal'
import {
  ApprovalDecisionMessage,
  ApprovalRequestMessage,
  encodeMessage,
  PROTOCOL_VERSION,
  ProtocolError,
} from '@signalbox/core/protocol'
import { createRejectionReporter, msgIdPart } from '../requests/rejections.ts'
import { type RequestService, type ServiceMode, serveDurableRequests } from '../requests/request-service.ts'
import type { TrustPolicy } from '../trust/policy.ts'
import type { Signer } from '../trust/sign.ts'
import { checkApprovalRequest, type RequestOrigin } from './request-check.ts'

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
  /** The reviewer's key: every decision is signed with it (agents with a trust policy accept nothing else). */
  signer?: Signer
  /**
   * Which agents' keys may send approval requests (`agents`), and (`reviewers`) whose decisions
   * count as settling a request elsewhere (without `reviewers`, none does: each request is decided
   * here). Requests not signed by a listed agent key are never shown.
   * Without one, requests are not checked (their origin is reported as unverified).
   */
  trust?: TrustPolicy
  clock?: Clock
  onRequest?(request: ApprovalRequest, origin: RequestOrigin): void
  onDecision?(request: ApprovalRequest, decision: ApprovalDecision): void
  /** A decision on a request this service saw, made by someone else (or this service). */
  onSettled?(requestId: string, decision: ApprovalDecision): void
  /** A request refused without asking (unverified origin, digest mismatch, unreadable arguments). */
  onRefused?(request: ApprovalRequest, reason: string): void
  onError?(error: unknown): void
}

export interface ReviewerService extends RequestService {}

/** The decision's message id was taken before this reviewer stored it: the agent may never see it. */
export class DecisionNotStoredError extends BusError {
  constructor(requestId: string) {
    super(
      'DECISION_NOT_STORED',
      `The decision on ${requestId} was not stored: its message id was already taken by another publisher.`,
    )
  }
}

/**
 * A reviewer on the bus: takes approval requests from `approvals.<agent>`, asks its `reviewer`,
 * and stores the decision durably on `approvals.<agent>.decisions`. It also watches decisions
 * so a request another reviewer settled is dropped here.
 */
export function serveReviewer(options: ReviewerServiceOptions): ReviewerService {
  const { bus, trust, signer } = options
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const report = createRejectionReporter({ bus, subjects, component: 'reviewer', clock })
  const agentToken = options.agentId ?? '*'
  const requestSubject = `${subjects.prefix}.approvals.${agentToken}`
  const decisionSubject = `${subjects.prefix}.approvals.${agentToken}.decisions`

  const publishDecision = async (request: ApprovalRequest, decision: ApprovalDecision, signal: AbortSignal) => {
    // Quote what was shown; a reviewer cannot re-bind its decision to another call.
    const unsigned: ApprovalDecisionMessage = {
      v: PROTOCOL_VERSION,
      type: 'approval.decision',
      ...decideApproval(request, decision, decision.reviewer, decision.decidedAt),
      // Approve with edited arguments: the agent validates them and runs the edited call.
      ...(decision.arguments === undefined ? {} : { arguments: decision.arguments }),
    }
    const reply = signer ? signer.sign(unsigned) : unsigned
    // Unguessable: nobody can store a message under this id first and so silence the decision.
    const msgId = msgIdPart(`decision-${request.requestId}-${randomBytes(12).toString('hex')}`)
    const stored = await bus.durablePublish(subjects.approvalDecisions(request.agentId), encodeMessage(reply), {
      msgId,
      signal,
    })
    if (stored.duplicate) throw new DecisionNotStoredError(request.requestId)
  }

  return serveDurableRequests({
    bus,
    subject: requestSubject,
    schema: ApprovalRequestMessage,
    idOf: (request) => request.requestId,
    deadlineOf: (request) => request.deadline,
    mode: options.mode ?? 'shared',
    group: options.group ?? 'reviewers',
    privatePurpose: 'approvals',
    report,
    settlements: {
      subject: decisionSubject,
      schema: ApprovalDecisionMessage,
      idOf: (decision) => decision.requestId,
      purpose: 'decided',
      // A forged decision (another call, other arguments, an untrusted key) must not stop people from reviewing.
      matches: (request, decision) => {
        const message = request as ApprovalRequestMessage
        if (decisionMismatch(message, decision) !== undefined) return false
        // With a trust policy, only decisions by its `reviewers` settle a request elsewhere: anyone
        // can publish a decision quoting a request they read, and it must not silence review.
        return trust === undefined || trust.check(decision, { toolName: message.toolName }).ok
      },
      onSettled: (id, { v: _v, type: _type, signer: _s, signature: _sig, ...decision }) => options.onSettled?.(id, decision),
    },
    clock,
    ...(options.onError ? { onError: options.onError } : {}),
    decide: async (message, signal) => {
      const { v: _v, type: _type, signer: _s, signature: _sig, ...request } = message
      const checked = checkApprovalRequest(message, trust)
      if (!checked.ok) {
        options.onRefused?.(request, checked.reason)
        report(
          subjects.approvals(request.agentId),
          JSON.stringify({ requestId: request.requestId, callId: request.callId, toolName: request.toolName }),
          new ProtocolError('PROTOCOL_INVALID_MESSAGE', `Approval request ${request.requestId} refused: ${checked.reason}`),
        )
        if (checked.action === 'ignore') return { request, decision: undefined }
        // Refusing is denying: the agent reads why, and never runs what nobody could check.
        const denial = decideApproval(request, { approved: false, reason: checked.reason }, signerName(options), clock.now())
        return { request, decision: denial }
      }
      options.onRequest?.(request, checked.origin)
      const decision = await options.reviewer.review(request, { signal })
      return { request, decision }
    },
    publish: async (_message, { request, decision }, signal) => {
      if (decision === undefined) return
      await publishDecision(request, decision, signal)
      options.onDecision?.(request, decision)
    },
  })
}

function signerName(options: ReviewerServiceOptions): string {
  return options.signer ? `reviewer ${options.signer.publicKey.slice(0, 8)}` : 'reviewer'
}
