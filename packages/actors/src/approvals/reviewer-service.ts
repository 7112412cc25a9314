import type { ApprovalDecision, ApprovalRequest, AuditLog, Clock, Reviewer } from '@signalbox/core'
import { decideApproval, systemClock } from '@signalbox/core'
import { type Bus, createSubjects } from '@signalbox/core/bus'
import { decisionMismatch, openMessage } from '@signalbox/core/internal'
import {
  ApprovalAliveMessage,
  ApprovalDecisionMessage,
  ApprovalRequestMessage,
  ApprovalWithdrawnMessage,
  callDigest,
  decodeMessage,
  encodeMessage,
  PROTOCOL_VERSION,
  ProtocolError,
} from '@signalbox/core/protocol'
import { createRejectionReporter, msgIdPart } from '../requests/rejections.ts'
import { type RequestService, type Settlements, serveDurableRequests } from '../requests/request-service.ts'
import { publishSignedReply, type ReplyServiceOptions, signedReply } from '../requests/signed-replies.ts'
import { watchSilence } from '../silence.ts'
import type { TrustPolicy } from '../trust/policy.ts'
import { checkApprovalRequest, type RequestOrigin } from './request-check.ts'

export interface ReviewerServiceOptions extends ReplyServiceOptions {
  /** Decides each request: `policyReviewer(...)`, `terminalReviewer()`, or your own. */
  reviewer: Reviewer
  /**
   * Which agents' keys may send approval requests (`agents`), and (`reviewers`) whose decisions
   * count as settling a request elsewhere (without `reviewers`, none does: each request is decided
   * here; other decisions are not reported through `onSettled` either). Requests not signed by a
   * listed agent key are never shown; without `agents`, requests are not checked (their origin is
   * reported as unverified), so the agents' own policy can be given to their reviewers as it is.
   * Without a policy, nothing is checked.
   */
  trust?: TrustPolicy
  onRequest?(request: ApprovalRequest, origin: RequestOrigin): void
  onDecision?(request: ApprovalRequest, decision: ApprovalDecision): void
  /** A decision on a request this service saw, made by someone else (or this service). */
  onSettled?(requestId: string, decision: ApprovalDecision): void
  /** A request refused without asking (unverified origin, digest mismatch, unreadable arguments). */
  onRefused?(request: ApprovalRequest, reason: string): void
  /** Where orphaned requests are recorded (`approval.orphaned`), e.g. `busAuditLog(...)`. */
  audit?: AuditLog
  /** A request was withdrawn because the agent that asked stopped sending heartbeats. */
  onOrphaned?(request: ApprovalRequest): void
  /**
   * The agent withdrew a request (a correction cancelled the call, its run stopped): it is no
   * longer asked here, and a decision on it would be refused. With a policy that names `agents`,
   * only a withdrawal signed by the agent's key counts.
   */
  onWithdrawn?(requestId: string, withdrawal: { reason: string; by?: string; withdrawnAt: number }): void
}

/** Heartbeats an agent may miss before its request counts as orphaned. */
export const MISSED_HEARTBEATS = 3

export interface ReviewerService extends RequestService {}

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

  const publishDecision = async (request: ApprovalRequest, decision: ApprovalDecision, signal: AbortSignal) => {
    // Quote what was shown; a reviewer cannot re-bind its decision to another call.
    const message: ApprovalDecisionMessage = {
      v: PROTOCOL_VERSION,
      type: 'approval.decision',
      ...decideApproval(request, decision, decision.reviewer, decision.decidedAt),
      // Approve with edited arguments: the agent validates them and runs the edited call. Their
      // digest is signed with the rest, so the signature covers the edit.
      ...(decision.arguments === undefined
        ? {}
        : { arguments: decision.arguments, editedDigest: callDigest(request.toolName, decision.arguments) }),
    }
    const subject = subjects.approvalDecisions(request.agentId)
    await publishSignedReply(bus, { subject, message, signer, idPrefix: 'decision', requestId: request.requestId }, signal)
  }

  const orphans = watchOrphans({ bus, subject: subjects.alive(options.agentId), clock })
  /** Marks the request orphaned, for every reviewer: a stored denial by `system` settles it everywhere. */
  const orphan = async (request: ApprovalRequestMessage, silentMs: number) => {
    const shown = requestShown(request)
    const reason = `orphaned: the agent that asked sent no heartbeat for ${silentMs} ms (its process is gone), so nobody would apply a decision; withdrawn`
    const now = clock.now()
    const reply: ApprovalDecisionMessage = {
      v: PROTOCOL_VERSION,
      type: 'approval.decision',
      ...decideApproval(shown, { approved: false, reason }, 'system', now),
    }
    service.settled(request.requestId)
    await bus.durablePublish(subjects.approvalDecisions(request.agentId), encodeMessage(reply), {
      msgId: msgIdPart(`decision-${request.requestId}-system`),
      signal: AbortSignal.timeout(30_000),
    })
    await options.audit?.record({
      kind: 'approval.orphaned',
      agentId: request.agentId,
      runId: request.runId,
      runPath: request.runPath,
      callId: request.callId,
      toolName: request.toolName,
      shown: request.arguments,
      digest: request.digest,
      decision: 'orphaned',
      reason,
      actor: 'system',
      requestedAt: request.requestedAt,
      decidedAt: now,
    })
    options.onOrphaned?.(shown)
  }

  const withdrawals: Settlements<typeof ApprovalWithdrawnMessage> = {
    subject: subjects.approvalWithdrawals(options.agentId),
    schema: ApprovalWithdrawnMessage,
    idOf: (withdrawal) => withdrawal.requestId,
    purpose: 'withdrawn',
    withdrawal: 'withdrawn',
    // Anyone allowed to publish here is an agent (permissions); with the agents' keys, only theirs count.
    trusted: (withdrawal) => trust?.options.agents === undefined || trust.check(withdrawal, { agentId: withdrawal.agentId }).ok,
    matches: (request, withdrawal) => {
      const message = request as ApprovalRequestMessage
      return (
        message.agentId === withdrawal.agentId && message.callId === withdrawal.callId && message.digest === withdrawal.digest
      )
    },
    onSettled: (id, { reason, by, withdrawnAt }) =>
      options.onWithdrawn?.(id, { reason, ...(by !== undefined ? { by } : {}), withdrawnAt }),
  }

  const service: RequestService = serveDurableRequests({
    bus,
    subject: subjects.approvals(options.agentId),
    schema: ApprovalRequestMessage,
    idOf: (request) => request.requestId,
    deadlineOf: (request) => request.deadline,
    mode: options.mode ?? 'shared',
    group: options.group ?? 'reviewers',
    privatePurpose: 'approvals',
    report,
    settlements: {
      subject: subjects.approvalDecisions(options.agentId),
      schema: ApprovalDecisionMessage,
      idOf: (decision) => decision.requestId,
      purpose: 'decided',
      // A forged decision (another call, other arguments, an untrusted key) must not stop people from
      // reviewing. With a policy that names `reviewers`, only their decisions settle a request
      // elsewhere: anyone can publish a decision quoting a request they read.
      trusted: (decision) => {
        if (trust === undefined) return true
        // Without the request its tool is unknown: a key allowed for some tool passes here, `matches` checks which.
        const reviewers = trust.options.reviewers
        const tools = reviewers === undefined ? [] : Array.isArray(reviewers) ? [undefined] : Object.keys(reviewers)
        return tools.some((toolName) => trust.check(decision, toolName === undefined ? {} : { toolName }).ok)
      },
      matches: (request, decision) => {
        const message = request as ApprovalRequestMessage
        if (decisionMismatch(message, decision) !== undefined) return false
        return trust === undefined || trust.check(decision, { toolName: message.toolName }).ok
      },
      onSettled: (id, message) => options.onSettled?.(id, signedReply(message, { trust, nameField: 'reviewer' })),
    },
    withdrawals,
    clock,
    ...(options.onError ? { onError: options.onError } : {}),
    decide: async (message, signal) => {
      const request = requestShown(message)
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
      const stopWatching = orphans.watch(message, (silentMs) => {
        orphan(message, silentMs).catch((error) => options.onError?.(error))
      })
      try {
        options.onRequest?.(request, checked.origin)
        const decision = await options.reviewer.review(request, { signal })
        return { request, decision }
      } finally {
        stopWatching()
      }
    },
    publish: async (_message, { request, decision }, signal) => {
      if (decision === undefined) return
      await publishDecision(request, decision, signal)
      options.onDecision?.(request, decision)
    },
  })
  return {
    get ready() {
      return Promise.all([service.ready, orphans.ready]).then(() => {})
    },
    get inFlight() {
      return service.inFlight
    },
    settled: (id) => service.settled(id),
    close() {
      orphans.close()
      service.close()
    },
  }
}

/** The request as a reviewer sees it: what it says, without its envelope, signature or heartbeat promise. */
function requestShown(message: ApprovalRequestMessage): ApprovalRequest {
  const { heartbeatMs: _heartbeatMs, ...request } = openMessage(message).body
  return request
}

function signerName(options: ReviewerServiceOptions): string {
  return options.signer ? `reviewer ${options.signer.publicKey.slice(0, 8)}` : 'reviewer'
}

/**
 * Listens to `approval.alive` and tells, for a request that promised heartbeats (`heartbeatMs`),
 * when its agent has been silent for `MISSED_HEARTBEATS` intervals (counted from when this
 * service took the request, so a request found in the log long after its agent died is also caught).
 */
function watchOrphans(options: { bus: Bus; subject: string; clock: Clock }) {
  const { clock } = options
  const lastSeen = new Map<string, number>()
  const subscription = options.bus.subscribe(options.subject, (message) => {
    const decoded = decodeMessage(message.data, ApprovalAliveMessage, { maxBytes: options.bus.maxPayload })
    if (!decoded.ok) return
    const now = clock.now()
    for (const id of decoded.value.requestIds) lastSeen.set(id, now)
    if (lastSeen.size > 10_000) lastSeen.delete(lastSeen.keys().next().value as string)
  })
  return {
    ready: subscription.ready,
    watch(request: ApprovalRequestMessage, onOrphaned: (silentMs: number) => void): () => void {
      const { heartbeatMs } = request
      if (heartbeatMs === undefined) return () => {}
      const watch = watchSilence(
        clock,
        {
          limitMs: MISSED_HEARTBEATS * heartbeatMs,
          recheckMs: heartbeatMs,
          // A stall here that ends just before the look leaves the beats sent meanwhile unread: look once more.
          confirmMs: heartbeatMs / 2,
          lastHeard: () => lastSeen.get(request.requestId) ?? 0,
        },
        onOrphaned,
      )
      return () => {
        watch.stop()
        lastSeen.delete(request.requestId)
      }
    },
    close() {
      subscription.unsubscribe()
    },
  }
}
