/**
 * Why a tool host that verifies approvals refused a call. The model reads the message (through the
 * agent's remote tool, as `Error: <message>`); `details.reason` is the stable code a program reads.
 */
import { ErrorCode, SignalboxError } from '@signalbox/core'
import type { CallApprovalProblem } from '@signalbox/core/internal'
import type { TrustRejectionCode } from '../trust/policy.ts'

/**
 * `missing`: no approval in the call. The rest are `APPROVAL_INVALID`: it does not decode
 * (`malformed`), is not signed by a key the host's policy allows for the tool (`unsigned`,
 * `bad-signature`, `unknown-key`, `key-not-allowed`), does not approve exactly this call (`denied`,
 * `wrong-call`, `wrong-digest`), is past its deadline (`expired`), was used for another call
 * (`replayed`), or holds longer than the host remembers used approvals (`outlives-ledger`).
 */
export type ApprovalRefusalReason =
  | 'missing'
  | TrustRejectionCode
  | CallApprovalProblem['code']
  | 'expired'
  | 'replayed'
  | 'outlives-ledger'

/** A call of a gated tool that carries no signed approval. */
export class ApprovalRequiredError extends SignalboxError {
  readonly reason = 'missing' as const
  constructor(toolName: string) {
    super(
      ErrorCode.APPROVAL_REQUIRED,
      `"${toolName}" was not executed: it needs a person's approval, and its tool host runs it only with the reviewer's signed decision for exactly this call. This call carries none.`,
      { fault: 'peer', details: { reason: 'missing', toolName } },
    )
  }
}

/** A call whose approval the host does not accept; `reason` says why, the message explains it. */
export class ApprovalInvalidError extends SignalboxError {
  readonly reason: Exclude<ApprovalRefusalReason, 'missing'>
  constructor(toolName: string, reason: Exclude<ApprovalRefusalReason, 'missing'>, why: string, requestId?: string) {
    super(
      ErrorCode.APPROVAL_INVALID,
      `"${toolName}" was not executed: its tool host refused the approval this call carries (${reason}: ${why}).`,
      { fault: 'peer', details: { reason, toolName, ...(requestId !== undefined ? { requestId } : {}) } },
    )
    this.reason = reason
  }
}

export type ApprovalRefusal = ApprovalRequiredError | ApprovalInvalidError
