/**
 * A tool host's own check of the approval a call carries (protocol §8.6): the approval gate no
 * longer lives only in the agent, so a modified or compromised agent, or any client that may
 * publish tool calls, cannot run a gated tool without a person's yes. The call must carry the
 * reviewer's signed `approval.decision`, as received; the host checks, in order, that it decodes,
 * that it is signed by a key its trust policy allows for the tool, that it approves exactly this
 * call (call id, and the digest of the arguments the host would run: the edited digest for an
 * edit; the binding rule is core's `callApprovalMismatch`), that it was not used for another call,
 * and that its deadline has not passed (give or take `clockSkewMs`).
 */
import type { AuditEntry, Tool } from '@signalbox/core'
import { callApprovalMismatch } from '@signalbox/core/internal'
import { ApprovalDecisionMessage, callDigest, type ToolCallMessage } from '@signalbox/core/protocol'
import type { TrustPolicy } from '../trust/policy.ts'
import { ApprovalInvalidError, type ApprovalRefusal, ApprovalRequiredError } from './approval-errors.ts'

/**
 * Clocks of the agent (which set the request's deadline), the reviewer and the host are apart by
 * this much at most: a decision is accepted until its deadline plus this, by the host's clock.
 */
export const DEFAULT_APPROVAL_CLOCK_SKEW_MS = 30_000

export type VerifiedApproval = {
  ok: true
  decision: ApprovalDecisionMessage
  /** Until when it holds (the request's deadline, quoted and signed). */
  deadline: number
  /** The policy's name for the key that signed it. */
  reviewer: string
  signer: string
}

/** Whether `tool` needs approval for these (validated) arguments: its rule, run on the host. A rule that throws gates the call. */
export async function needsApproval(tool: Tool<any>, args: unknown): Promise<boolean> {
  const rule = tool.needsApproval
  if (rule === undefined || rule === false) return false
  if (rule === true) return true
  try {
    return Boolean(await rule(args))
  } catch {
    return true
  }
}

/** Everything about the approval a call carries that does not depend on time or earlier calls. */
export function verifyApproval(
  trust: TrustPolicy,
  toolName: string,
  call: ToolCallMessage,
): VerifiedApproval | { ok: false; error: ApprovalRefusal } {
  if (call.approval === undefined) return { ok: false, error: new ApprovalRequiredError(toolName) }
  const parsed = ApprovalDecisionMessage.safeParse(call.approval)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue && issue.path.length > 0 ? `${issue.path.map(String).join('.')}: ` : ''
    const why = `it is not an approval.decision (${where}${issue?.message ?? 'invalid'})`
    return { ok: false, error: new ApprovalInvalidError(toolName, 'malformed', why) }
  }
  const decision = parsed.data
  const verdict = trust.check(decision, { toolName })
  if (!verdict.ok) {
    return { ok: false, error: new ApprovalInvalidError(toolName, verdict.code, verdict.reason, decision.requestId) }
  }
  const mismatch = callApprovalMismatch(call, decision)
  if (mismatch !== undefined) {
    return { ok: false, error: new ApprovalInvalidError(toolName, mismatch.code, mismatch.reason, decision.requestId) }
  }
  // `callApprovalMismatch` refuses a decision without a deadline.
  return { ok: true, decision, deadline: decision.deadline as number, reviewer: verdict.name, signer: verdict.signer }
}

/** The host's audit entry for a refused call: what it was asked to run, and why it did not. */
export function refusedCallAudit(call: ToolCallMessage, error: ApprovalRefusal, at: number): AuditEntry {
  let digest: string | undefined
  try {
    digest = callDigest(call.toolName, call.arguments)
  } catch {
    digest = undefined
  }
  const requestId = error.details?.requestId
  return {
    kind: 'tool.refused',
    agentId: call.agentId,
    runId: call.runId,
    runPath: [],
    callId: call.callId,
    toolName: call.toolName,
    shown: call.arguments,
    ...(digest !== undefined ? { digest } : {}),
    decision: 'refused',
    reason: `${error.code} ${error.reason}${typeof requestId === 'string' ? ` (approval ${requestId})` : ''}: ${error.message}`,
    actor: 'system',
    decidedAt: at,
  }
}
