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
import { callApprovalMismatch, describeError } from '@signalbox/core/internal'
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
import { type SharedApprovalLedger, UsedApprovals } from './used-approvals.ts'

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

export interface ApprovalGateOptions<Reply = unknown> {
  trust: TrustPolicy
  clockSkewMs?: number
  audit?: AuditLog
  clock: Clock
  /** How long an answer is kept for the redeliveries of its call, at least (besides the decision's validity). */
  retainMs: number
  /** The pool's shared memory of used approvals (a JetStream KV bucket); without it, this process's only. */
  ledger?: SharedApprovalLedger<Reply | ErrorMessage>
  onRefused?(call: ToolCallMessage, refusal: WireError & { reason: ApprovalRefusalReason }): void
  onError?(error: unknown): void
}

/** What the host does with a gated call: answer it now (refused, or a redelivery), or run it and `settle` its answer. */
export type Admission<Reply> =
  | { kind: 'answer'; reply: Promise<Reply | ErrorMessage> | ErrorMessage }
  | { kind: 'run'; settle(reply: Reply): void }

/** The enforcing host's gate: verifies the approval a gated call carries, and lets each decision run one call. */
export class ApprovalGate<Reply> {
  readonly #options: ApprovalGateOptions<Reply>
  readonly #clockSkewMs: number
  /** Approvals already used, by request id: each lets one call run (its redeliveries get its answer). */
  readonly #used: UsedApprovals<Reply | ErrorMessage>

  constructor(options: ApprovalGateOptions<Reply>) {
    this.#options = options
    this.#clockSkewMs = options.clockSkewMs ?? DEFAULT_APPROVAL_CLOCK_SKEW_MS
    if (!(this.#clockSkewMs >= 0))
      throw new ConfigError(`serveTools: approvals.clockSkewMs must be 0 or more, got ${this.#clockSkewMs}.`)
    this.#used = new UsedApprovals({ clock: options.clock, retainMs: options.retainMs })
  }

  /**
   * `identity`: the call's idempotency key (`<runId>:<callId>` when it has none). `signal`: the
   * host stops (a wait on the shared ledger ends).
   */
  async admit(toolName: string, call: ToolCallMessage, identity: string, signal: AbortSignal): Promise<Admission<Reply>> {
    const verified = verifyApproval(this.#options.trust, toolName, call)
    if (!verified.ok) return { kind: 'answer', reply: this.#refuse(call, verified.error) }
    const { decision, deadline } = verified
    const { requestId } = decision
    const until = deadline + this.#clockSkewMs
    const claim = this.#used.claim(requestId, identity, until)
    if (claim.kind === 'same') return { kind: 'answer', reply: claim.answer }
    const replayed = () =>
      this.#refuse(
        call,
        new ApprovalInvalidError(
          toolName,
          'replayed',
          'it was already used for another call; a decision lets one call run',
          requestId,
        ),
      )
    if (claim.kind === 'other') return { kind: 'answer', reply: replayed() }
    const now = this.#options.clock.now()
    if (now > until) {
      const why = `its deadline ${new Date(deadline).toISOString()} has passed (tolerance ${this.#clockSkewMs} ms)`
      const refused = this.#refuse(call, new ApprovalInvalidError(toolName, 'expired', why, requestId))
      // Its redeliveries get the same answer.
      claim.settle(refused)
      return { kind: 'answer', reply: refused }
    }
    const ledger = this.#options.ledger
    if (ledger === undefined) return { kind: 'run', settle: (reply) => claim.settle(reply) }

    // The pool's memory (and this host's before a restart): the first host to record the use wins.
    let shared: Awaited<ReturnType<SharedApprovalLedger<Reply | ErrorMessage>['claim']>>
    try {
      const retention = await ledger.retentionMs(signal)
      if (until > now + retention) {
        // Its entry would go before the decision does, and a replay be taken for a first use then.
        const why = `it holds until ${new Date(until).toISOString()}, longer than this host remembers used approvals (${retention} ms)`
        const refused = this.#refuse(call, new ApprovalInvalidError(toolName, 'outlives-ledger', why, requestId))
        claim.settle(refused)
        return { kind: 'answer', reply: refused }
      }
      shared = await ledger.claim(requestId, identity, { answerBy: Math.max(call.deadline, now), signal })
    } catch (error) {
      // Fail closed, and nothing is remembered: nothing ran, so a retry is judged again.
      this.#used.release(requestId)
      quietly(() => this.#options.onError?.(error))
      return {
        kind: 'answer',
        reply: errorMessage(
          {
            code: 'TOOL_FAILED',
            message: `"${toolName}" was not executed: its tool host could not record the use of its approval in the pool's ledger (${describeError(error)}). Nothing ran; the call may be retried.`,
          },
          call.callId,
        ),
      }
    }
    if (shared.kind === 'other') {
      // Not remembered here under this call: the decision is the other call's, whose retries must get its answer.
      this.#used.release(requestId)
      const refused = replayed()
      claim.settle(refused)
      return { kind: 'answer', reply: refused }
    }
    if (shared.kind === 'same') {
      // The same call, used before by another host of the pool or by this one before a restart: its answer.
      const reply = shared.answer.then(
        (found): Reply | ErrorMessage => {
          if (typeof found === 'object') return found.answer
          // No answer yet (its host may have stopped, or be slow): a later retry asks the ledger again.
          if (found === 'unanswered') this.#used.release(requestId)
          const message =
            found === 'unkept'
              ? `"${toolName}" ran once already for this call; its answer was too large to keep, and it is not run again.`
              : `"${toolName}" was started for this call by a tool host that gave no answer before the call's deadline (it stopped); it may or may not have taken effect, and it is not run again.`
          return errorMessage({ code: 'TOOL_HOST_STOPPED', message }, call.callId)
        },
        (error: unknown): ErrorMessage => {
          // This host stopped (or lost the ledger) while waiting: nothing is remembered here, a retry asks again.
          this.#used.release(requestId)
          quietly(() => this.#options.onError?.(error))
          const message = `"${toolName}" is being run for this call by another tool host, and this one could not wait for its answer (${describeError(error)}); it is not run again here.`
          return errorMessage({ code: 'TOOL_HOST_STOPPED', message }, call.callId)
        },
      )
      // Redeliveries to this process meanwhile get the same answer (a released claim is no longer kept).
      void reply.then((answer) => claim.settle(answer))
      return { kind: 'answer', reply }
    }
    return {
      kind: 'run',
      settle: (reply) => {
        claim.settle(reply)
        shared.settle(reply).catch((error: unknown) => quietly(() => this.#options.onError?.(error)))
      },
    }
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
