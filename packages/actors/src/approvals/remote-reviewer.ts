import {
  type AgentEvent,
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
import { publishEvent } from '../agents/agent-connection.ts'
import { busAuditLog } from '../audit/bus-audit.ts'
import { DurableRequester } from '../requests/durable-request.ts'
import { createRejectionReporter } from '../requests/rejections.ts'
import type { TrustPolicy } from '../trust/policy.ts'
import type { Signer } from '../trust/sign.ts'
import { type EvidenceBook, signedAuditLog } from '../trust/signed-audit.ts'

export interface RemoteReviewerOptions {
  bus: Bus
  subjects?: Subjects
  /**
   * Where rejected (late, duplicate, mismatched, forged) decisions are recorded as
   * `approval.rejected`. Default: the audit trail on the bus (`busAuditLog`); `false` records none.
   */
  audit?: AuditLog | false
  /**
   * Who may decide: a decision must be signed by a key the policy allows for the tool (never the
   * agent's own key). Without one (the embedded, single-process case) decisions are not checked.
   */
  trust?: TrustPolicy
  /** The agent's key: approval requests are signed with it, and it may never approve its own calls. */
  signer?: Signer
  /** Accepted signed decisions are kept here for the audit entry that records them (`signedAuditLog`). */
  evidence?: EvidenceBook
  /**
   * Also told of every rejected decision (the `approval.rejected` event, which is published on
   * `agents.<agent>.events.approval.rejected` in any case).
   */
  onRejected?(event: Extract<AgentEvent, { type: 'approval.rejected' }>): void
  clock?: Clock
}

export interface RemoteReviewer extends Reviewer {
  /** Stops listening; pending reviews fail (the agent then denies by default). */
  close(): void
}

/**
 * The agent's side of remote approval: the request goes out durably on
 * `approvals.<agent>`, decisions come back on `approvals.<agent>.decisions`. Both travel on the
 * durable path, so a server restart in between loses neither. With a trust policy, only a decision
 * signed by a key allowed for the tool is applied; anything else is recorded and the request stays
 * pending until a valid decision or its deadline.
 */
export function remoteReviewer(options: RemoteReviewerOptions): RemoteReviewer {
  const { bus, trust, signer } = options
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const audit = options.audit === false ? undefined : (options.audit ?? defaultAudit(bus, subjects, signer))
  const report = createRejectionReporter({ bus, subjects, component: 'agent-approvals', clock })
  const requester = new DurableRequester<typeof ApprovalDecisionMessage, ApprovalRequest>({
    bus,
    schema: ApprovalDecisionMessage,
    idOf: (decision) => decision.requestId,
    replySubjectOf: (request) => subjects.approvalDecisions(request.agentId),
    replyName: 'Decision',
    purpose: 'decisions',
    report,
    onRejected: ({ reply, reason, context: request }) => {
      const at = clock.now()
      const entry = rejectedDecisionAudit({ run: request, request, decision: reply, reason, at })
      // The signed message is kept as evidence: who tried to decide, provably (or that nobody signed).
      const evidence = reply.signer !== undefined ? { evidence: { ...reply } } : {}
      try {
        Promise.resolve(audit?.record({ ...entry, ...evidence })).catch(() => {})
      } catch {
        // Recording is best effort: a failing audit log must not stop the review.
      }
      const event = {
        type: 'approval.rejected' as const,
        agentId: request.agentId,
        runId: request.runId,
        runPath: request.runPath,
        ...(request.agentPath ? { agentPath: request.agentPath } : {}),
        at,
        request,
        decision: reply,
        reason,
      }
      publishEvent(bus, subjects, event)
      try {
        options.onRejected?.(event)
      } catch {
        // A listener must not stop the review.
      }
    },
  })

  /** Why `decision` may not be applied to `request`: binding first, then who signed it. */
  const check = (request: ApprovalRequest, decision: ApprovalDecisionMessage): string | undefined => {
    const mismatch = decisionMismatch(request, decision)
    if (mismatch !== undefined || trust === undefined) return mismatch
    const verdict = trust.check(decision, { toolName: request.toolName, agentId: request.agentId })
    if (!verdict.ok) return `${verdict.code}: ${verdict.reason}`
    if (signer !== undefined && verdict.signer === signer.publicKey) {
      return "own-key: signed with the agent's own key: an agent never decides its own calls"
    }
    return undefined
  }

  return {
    async review(request, { signal }): Promise<ApprovalDecision> {
      const unsigned: ApprovalRequestMessage = { v: PROTOCOL_VERSION, type: 'approval.request', ...request }
      const message = signer ? signer.sign(unsigned) : unsigned
      const reply = await requester.request({
        id: request.requestId,
        context: request,
        subject: subjects.approvals(request.agentId),
        message,
        check: (decision) => check(request, decision),
        signal,
      })
      const { v: _v, type: _type, signer: signedBy, signature: _signature, ...decision } = reply
      if (trust === undefined || signedBy === undefined) return decision
      options.evidence?.remember(`decision:${request.callId}:${request.digest}`, reply)
      // The name shown and audited is the policy's name for the key, never the string the message carries.
      return { ...decision, reviewer: trust.nameOf(signedBy) ?? decision.reviewer }
    },
    close() {
      requester.close(new BusClosedError('the bus reviewer was closed'))
    },
  }
}

/** The audit trail on the bus, signed with the agent's key when it has one. */
export function defaultAudit(bus: Bus, subjects: Subjects, signer: Signer | undefined): AuditLog {
  const log = busAuditLog({ bus, subjects })
  return signer ? signedAuditLog({ log, signer }) : log
}
