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
import type { AuditEntry, AuditLog, Clock, Tool } from '@signalbox/core'
import { ConfigError } from '@signalbox/core'
import { callApprovalMismatch } from '@signalbox/core/internal'
import {
  ApprovalDecisionMessage,
  callDigest,
  type ErrorMessage,
  errorMessage,
  type ToolCallMessage,
  type WireError,
} from '@signalbox/core/protocol'
import { toWireError } from '../requests/rejections.ts'
import type { TrustPolicy } from '../trust/policy.ts'
import {
  ApprovalInvalidError,
  type ApprovalRefusal,
  type ApprovalRefusalReason,
  ApprovalRequiredError,
} from './approval-errors.ts'
import { UsedApprovals } from './used-approvals.ts'

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

export interface ApprovalGateOptions {
  trust: TrustPolicy
  clockSkewMs?: number
  audit?: AuditLog
  clock: Clock
  /** How long an answer is kept for the redeliveries of its call, at least (besides the decision's validity). */
  retainMs: number
  onRefused?(call: ToolCallMessage, refusal: WireError & { reason: ApprovalRefusalReason }): void
  onError?(error: unknown): void
}

/** What the host does with a gated call: answer it now (refused, or a redelivery), or run it and `settle` its answer. */
export type Admission<Reply> =
  | { kind: 'answer'; reply: Promise<Reply | ErrorMessage> | ErrorMessage }
  | { kind: 'run'; settle(reply: Reply): void }

/** The enforcing host's gate: verifies the approval a gated call carries, and lets each decision run one call. */
export class ApprovalGate<Reply> {
  readonly #options: ApprovalGateOptions
  readonly #clockSkewMs: number
  /** Approvals already used, by request id: each lets one call run (its redeliveries get its answer). */
  readonly #used: UsedApprovals<Reply | ErrorMessage>

  constructor(options: ApprovalGateOptions) {
    this.#options = options
    this.#clockSkewMs = options.clockSkewMs ?? DEFAULT_APPROVAL_CLOCK_SKEW_MS
    if (!(this.#clockSkewMs >= 0))
      throw new ConfigError(`serveTools: approvals.clockSkewMs must be 0 or more, got ${this.#clockSkewMs}.`)
    this.#used = new UsedApprovals({ clock: options.clock, retainMs: options.retainMs })
  }

  /** `identity`: the call's idempotency key (`<runId>:<callId>` when it has none). */
  admit(toolName: string, call: ToolCallMessage, identity: string): Admission<Reply> {
    const verified = verifyApproval(this.#options.trust, toolName, call)
    if (!verified.ok) return { kind: 'answer', reply: this.#refuse(call, verified.error) }
    const { decision, deadline } = verified
    const until = deadline + this.#clockSkewMs
    const claim = this.#used.claim(decision.requestId, identity, until)
    if (claim.kind === 'same') return { kind: 'answer', reply: claim.answer }
    if (claim.kind === 'other') {
      const why = 'it was already used for another call; a decision lets one call run'
      return {
        kind: 'answer',
        reply: this.#refuse(call, new ApprovalInvalidError(toolName, 'replayed', why, decision.requestId)),
      }
    }
    if (this.#options.clock.now() > until) {
      const why = `its deadline ${new Date(deadline).toISOString()} has passed (tolerance ${this.#clockSkewMs} ms)`
      const refused = this.#refuse(call, new ApprovalInvalidError(toolName, 'expired', why, decision.requestId))
      // Its redeliveries get the same answer.
      claim.settle(refused)
      return { kind: 'answer', reply: refused }
    }
    return { kind: 'run', settle: (reply) => claim.settle(reply) }
  }

  /** A refused call: audited, reported, and answered with the reason (the tool does not run). */
  #refuse(call: ToolCallMessage, error: ApprovalRefusal): ErrorMessage {
    const { audit, clock, onRefused, onError } = this.#options
    const wire = toWireError(error)
    if (audit !== undefined) {
      Promise.resolve()
        .then(() => audit.record(refusedCallAudit(call, error, clock.now())))
        .catch((cause: unknown) => quietly(() => onError?.(cause)))
    }
    quietly(() => onRefused?.(call, { ...wire, reason: error.reason }))
    return errorMessage(wire, call.callId)
  }
}

/** An observer callback must not cost the caller its reply. */
function quietly(fn: () => void): void {
  try {
    fn()
  } catch {
    // ignored
  }
}
