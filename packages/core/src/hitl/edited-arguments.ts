/**
 * "Approve with edited arguments": a reviewer approves the call with arguments they changed
 * (a smaller amount, another recipient). The agent checks the edit against the tool's own schema
 * (a reviewer is trusted to decide, not to bypass validation), runs the call with the edited
 * arguments, tells the model the arguments were changed, and the audit keeps the call as shown,
 * the edit, and the digest of what ran. An edit that does not validate is not run: the call is
 * refused, the model reads why, and the audit records the rejection.
 */
import type { AgentContext, CurrentCall } from '../machine/context.ts'
import type { Tool } from '../tool.ts'
import { callDigest } from './digest.ts'
import type { ApprovalDecision, ApprovalRequest, AuditEntry } from './types.ts'

export type EditedArguments = { kind: 'none' } | { kind: 'valid'; args: unknown } | { kind: 'invalid'; issues: string[] }

/**
 * The check of each decision's edit, by decision: the machine asks whether the edit is valid
 * (to choose where to go) and then applies it, and a tool's validation (a zod refinement, a JSON
 * Schema validator) runs once per decision, not once per question.
 */
const checked = new WeakMap<object, { tool: object; result: EditedArguments }>()

/** Whether `decision` approves edited arguments, and whether `tool` accepts them. */
export function checkEditedArguments(tool: Pick<Tool, 'validate'> | undefined, decision: ApprovalDecision): EditedArguments {
  if (!decision.approved || decision.arguments === undefined) return { kind: 'none' }
  if (!tool) return { kind: 'invalid', issues: ['the tool is not available to check them'] }
  const known = checked.get(decision)
  if (known?.tool === tool) return known.result
  const result = validateEdit(tool, decision.arguments)
  checked.set(decision, { tool, result })
  return result
}

function validateEdit(tool: Pick<Tool, 'validate'>, args: unknown): EditedArguments {
  let validation: ReturnType<Tool['validate']>
  try {
    validation = tool.validate(structuredClone(args))
  } catch (error) {
    return { kind: 'invalid', issues: [error instanceof Error ? error.message : String(error)] }
  }
  if (!validation.ok) return { kind: 'invalid', issues: validation.issues }
  return { kind: 'valid', args: validation.value }
}

/** True when the decision approves edited arguments the tool rejects (the call must not run). */
export function editedArgumentsRejected(tool: Pick<Tool, 'validate'> | undefined, decision: unknown): boolean {
  return checkEditedArguments(tool, decision as ApprovalDecision).kind === 'invalid'
}

interface ApproveEditedDeps {
  context: AgentContext
  request: ApprovalRequest
  decision: ApprovalDecision
  edit: Exclude<EditedArguments, { kind: 'none' }>
  emit(context: AgentContext, body: ApprovalEventBody): void
  auditApproval(
    context: AgentContext,
    request: ApprovalRequest,
    outcome: { kind: AuditEntry['kind']; decision: string; reason: string | undefined; actor: string; decidedAt: number },
    extra: Partial<AuditEntry>,
  ): void
  /** The machine's way to set the result the model reads instead of running the call. */
  setResult(context: AgentContext, result: NonNullable<CurrentCall['result']>): Partial<AgentContext>
}

type ApprovalEventBody =
  | { type: 'approval.decided'; request: ApprovalRequest; decision: ApprovalDecision; latencyMs: number }
  | { type: 'approval.rejected'; request: ApprovalRequest; decision: unknown; reason: string }

/** The approval of an edited call, applied: events, audit, and the arguments that will run (or the refusal). */
export function approveEdited(deps: ApproveEditedDeps): Partial<AgentContext> {
  const { context, request, decision, edit } = deps
  const outcome = { decision: 'approved', reason: decision.reason, actor: decision.reviewer, decidedAt: decision.decidedAt }
  if (edit.kind === 'invalid') {
    const reason = `the edited arguments are invalid: ${edit.issues.join('; ')}`
    deps.emit(context, { type: 'approval.rejected', request, decision, reason })
    deps.auditApproval(context, request, { ...outcome, kind: 'approval.rejected', reason }, { edited: decision.arguments })
    return deps.setResult(context, {
      output: `Not executed: ${decision.reviewer} approved "${request.toolName}" with edited arguments, but they are invalid:\n${edit.issues.map((issue) => `- ${issue}`).join('\n')}`,
      isError: true,
      outcome: 'approval_denied',
    })
  }
  const editedDigest = callDigest(request.toolName, edit.args)
  deps.emit(context, { type: 'approval.decided', request, decision, latencyMs: decision.decidedAt - request.requestedAt })
  deps.auditApproval(context, request, { ...outcome, kind: 'approval.granted' }, { edited: edit.args, editedDigest })
  return { current: context.current ? { ...context.current, args: edit.args, approved: decision } : undefined }
}

/**
 * What the model reads after a call that ran with edited arguments: it asked for one call and
 * another ran, so it is told which. Unchanged when the call ran as requested.
 */
export function noteEditedArguments(
  call: { toolName: string; args: unknown; approval: ApprovalRequest | undefined } | undefined,
  output: string,
): string {
  if (!call?.approval || callDigest(call.toolName, call.args) === call.approval.digest) return output
  return `Note: the reviewer changed the arguments before approving; "${call.toolName}" ran with ${JSON.stringify(call.args)}.\n${output}`
}
