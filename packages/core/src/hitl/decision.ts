/**
 * The approval-binding rule, in one place: a decision counts only when it quotes the exact call
 * its reviewer was shown (request id, call id, argument digest, and the request's deadline when it
 * quotes one), says who decided, and, when it edits the arguments, carries the digest of the edit.
 * The agent machine, the remote reviewer, the reviewer service and the tool hosts that verify
 * approvals all check decisions with this module.
 */
import { callDigest } from './digest.ts'
import type { ApprovalDecision, ApprovalRequest, AuditEntry, Question } from './types.ts'

/** A reviewer's answer: a plain yes/no, or a yes/no with the reason the model will read. */
export type Verdict = boolean | { approved: boolean; reason?: string | undefined }

/**
 * A decision bound to `request`: it quotes the request's ids, digest and deadline, so it cannot be
 * applied to any other call, nor used after the request's deadline.
 */
export function decideApproval(
  request: ApprovalRequest,
  verdict: Verdict,
  reviewer: string,
  decidedAt: number,
): ApprovalDecision {
  const { approved, reason } = typeof verdict === 'boolean' ? { approved: verdict, reason: undefined } : verdict
  return {
    requestId: request.requestId,
    callId: request.callId,
    digest: request.digest,
    approved,
    ...(reason === undefined ? {} : { reason }),
    reviewer,
    decidedAt,
    deadline: request.deadline,
  }
}

/** What a decision is checked against: the request it answers. */
export type PendingCall = Pick<ApprovalRequest, 'requestId' | 'callId' | 'digest' | 'toolName' | 'deadline'>

/**
 * Why `decision` cannot be applied to `request`, or `undefined` when it can. `decision` may be
 * anything (it can come from a peer): its shape is checked before its binding.
 */
export function decisionMismatch(request: PendingCall | undefined, decision: unknown): string | undefined {
  if (!request) return 'no approval is pending'
  const shape = shapeProblem(decision)
  if (shape !== undefined) return shape
  const d = decision as Partial<ApprovalDecision>
  if (d.requestId !== request.requestId) return `requestId ${String(d.requestId)} does not match the pending request`
  if (d.callId !== request.callId) return `callId ${String(d.callId)} does not match the pending call ${request.callId}`
  if (d.digest !== request.digest) return 'the digest does not match the pending call (arguments differ from what was shown)'
  if (d.deadline !== undefined && d.deadline !== request.deadline)
    return `the decision quotes deadline ${String(d.deadline)}, not the request's ${request.deadline}`
  return editProblem(request.toolName, d)
}

/** Why a tool host refuses the decision a call carries (`callApprovalMismatch`). */
export type CallApprovalProblem = { code: 'malformed' | 'denied' | 'wrong-call' | 'wrong-digest'; reason: string }

/**
 * Why `decision` does not approve exactly `call` as a tool host receives it, or `undefined` when it
 * does. A host has no request to compare with, so it checks the decision against the call itself:
 * an approval, of this call id, whose digest (the edited digest, for an edit) is the digest of the
 * arguments the host is asked to run, quoting the deadline it holds until. Who signed it and when
 * are the host's other checks.
 */
export function callApprovalMismatch(
  call: { callId: string; toolName: string; arguments: unknown },
  decision: unknown,
): CallApprovalProblem | undefined {
  const shape = shapeProblem(decision)
  if (shape !== undefined) return { code: 'malformed', reason: shape }
  const d = decision as Partial<ApprovalDecision>
  if (typeof d.requestId !== 'string' || d.requestId === '') return { code: 'malformed', reason: 'the decision has no requestId' }
  if (typeof d.deadline !== 'number')
    return {
      code: 'malformed',
      reason: "the decision does not quote its request's deadline, so nobody can tell until when it holds",
    }
  if (!d.approved) return { code: 'denied', reason: `the decision denies the call${d.reason ? ` (${d.reason})` : ''}` }
  if (d.callId !== call.callId) return { code: 'wrong-call', reason: `it approves call ${String(d.callId)}, not ${call.callId}` }
  if (d.arguments !== undefined && d.editedDigest === undefined)
    return { code: 'malformed', reason: 'it edits the arguments without the digest of the edit (editedDigest)' }
  const edit = editProblem(call.toolName, d)
  if (edit !== undefined) return { code: 'wrong-digest', reason: edit }
  let digest: string
  try {
    digest = callDigest(call.toolName, call.arguments)
  } catch {
    return { code: 'wrong-digest', reason: 'the arguments of the call cannot be digested' }
  }
  if (digest !== (d.editedDigest ?? d.digest)) {
    const approved = d.editedDigest !== undefined ? 'other (edited) arguments' : 'other arguments'
    return { code: 'wrong-digest', reason: `it approves ${call.toolName} with ${approved}, not the ones in this call` }
  }
  return undefined
}

function shapeProblem(decision: unknown): string | undefined {
  if (!decision || typeof decision !== 'object') return 'the decision is not an object'
  const d = decision as Partial<ApprovalDecision>
  if (typeof d.approved !== 'boolean') return 'the decision has no boolean "approved"'
  if (typeof d.reviewer !== 'string' || d.reviewer === '') return 'the decision does not say who decided'
  return undefined
}

/** An edit's digest must be the digest of the edited arguments (it is what a signature covers). */
function editProblem(toolName: string, d: Partial<ApprovalDecision>): string | undefined {
  if (d.editedDigest === undefined) return undefined
  if (d.arguments === undefined) return 'the decision has an editedDigest but no edited arguments'
  let digest: string
  try {
    digest = callDigest(toolName, d.arguments)
  } catch {
    return 'the edited arguments cannot be digested'
  }
  return digest === d.editedDigest ? undefined : 'the editedDigest does not match the edited arguments'
}

/**
 * Who a refused reply is audited under: `actor`, who provably sent it (the policy's name for the
 * key that signed it, given by a checking reviewer or answerer), else the name it claims; that
 * name is kept as `claimed` when it is not the actor.
 */
function rejectedActor(actor: string | undefined, claimed: unknown): { actor: string; claimed?: string } {
  const named = typeof claimed === 'string' ? claimed : undefined
  const who = actor ?? named ?? 'unknown'
  return named !== undefined && named !== who ? { actor: who, claimed: named } : { actor: who }
}

/**
 * The audit entry for a decision that was not applied (late, duplicate, forged, malformed).
 * `request` is the request it claimed to answer, when known; `actor`, who provably sent it.
 */
export function rejectedDecisionAudit(options: {
  run: Pick<AuditEntry, 'agentId' | 'runId' | 'runPath'>
  request: ApprovalRequest | undefined
  decision: unknown
  reason: string
  at: number
  actor?: string | undefined
}): AuditEntry {
  const { request, reason } = options
  const d = (options.decision && typeof options.decision === 'object' ? options.decision : {}) as Partial<ApprovalDecision>
  return {
    kind: 'approval.rejected',
    agentId: options.run.agentId,
    runId: options.run.runId,
    runPath: options.run.runPath,
    ...(typeof d.callId === 'string' ? { callId: d.callId } : {}),
    ...(request ? { toolName: request.toolName, shown: request.arguments, digest: request.digest } : {}),
    decision: typeof d.approved === 'boolean' ? (d.approved ? 'approved' : 'denied') : 'malformed',
    reason,
    ...rejectedActor(options.actor, d.reviewer),
    ...(request ? { requestedAt: request.requestedAt } : {}),
    decidedAt: options.at,
    ...signedEvidence(options.decision),
  }
}

/**
 * The audit entry for an answer that was not given to the model (forged, for another question,
 * late): who tried (`actor`, who provably sent it; the name it claims is kept as `claimed`).
 */
export function rejectedAnswerAudit(options: {
  question: Question
  answer: unknown
  reason: string
  at: number
  toolName?: string
  actor?: string | undefined
}): AuditEntry {
  const { question } = options
  const a = (options.answer && typeof options.answer === 'object' ? options.answer : {}) as {
    answer?: unknown
    answeredBy?: unknown
  }
  return {
    kind: 'question.rejected',
    agentId: question.agentId,
    runId: question.runId,
    runPath: question.runPath,
    callId: question.callId,
    ...(options.toolName !== undefined ? { toolName: options.toolName } : {}),
    shown: question.question,
    decision: typeof a.answer === 'string' ? a.answer : 'malformed',
    reason: options.reason,
    ...rejectedActor(options.actor, a.answeredBy),
    requestedAt: question.askedAt,
    decidedAt: options.at,
    ...signedEvidence(options.answer),
  }
}

/** A signed message (one carrying `signer` and `signature`) is kept whole: who tried, provably. */
function signedEvidence(message: unknown): { evidence?: Record<string, unknown> } {
  if (!message || typeof message !== 'object') return {}
  const m = message as { signer?: unknown; signature?: unknown }
  return typeof m.signer === 'string' && typeof m.signature === 'string' ? { evidence: { ...m } } : {}
}
