/**
 * Every sentence the model reads in place of a tool's own output: denials, timeouts,
 * corrections, invalid calls. Kept together so the wording stays consistent and reviewable.
 */
import { formatDuration } from '../duration.ts'
import { ErrorCode, serializeError } from '../errors.ts'
import type { ToolOutcome } from '../events.ts'
import type { ApprovalDecision, ApprovalRequest } from '../hitl/types.ts'

export function approvalDeniedText(request: ApprovalRequest, decision: ApprovalDecision): string {
  const why = decision.reason ? `: ${decision.reason.trim().replace(/[.!?]*$/, '')}` : ' (no reason given)'
  return `Denied by ${decision.reviewer}${why}. The call "${request.toolName}" was not executed.`
}

export function approvalTimedOutText(request: ApprovalRequest): string {
  return `Not executed: nobody approved "${request.toolName}" within ${formatDuration(request.deadline - request.requestedAt)}, so it was denied by default. Ask the person, or choose another action.`
}

export function approvalUnavailableText(request: ApprovalRequest, reason: string): string {
  return `Not executed: "${request.toolName}" needs a person's approval and no reviewer could decide (${reason}). It was denied by default.`
}

export function steeredText(correction: string): string {
  return `Cancelled. The person says: ${correction}`
}

/** With the `cancel-batch` policy: an earlier call of the reply already carried the correction. */
export const batchSteeredText = 'Cancelled: a correction from the person replaced the remaining calls of this reply.'

export function handedOverText(to: string | undefined): string {
  return `Not executed: the conversation was handed over to "${to}".`
}

export function transferredText(to: string): string {
  return `Transferred the conversation to "${to}".`
}

export function toolFailedText(message: string): string {
  return `Error: ${message}`
}

export function unknownToolText(name: string, available: readonly string[]): string {
  return `Error: unknown tool "${name}". Available tools: ${available.length > 0 ? available.join(', ') : '(none)'}.`
}

export function argumentsNotJsonText(name: string, parseError: string): string {
  return `Error: the arguments for "${name}" are not valid JSON (${parseError}). Send one JSON object that matches the tool's schema.`
}

export function invalidArgumentsText(name: string, issues: readonly string[]): string {
  return `Error: invalid arguments for "${name}", the tool did not run:\n${issues.map((issue) => `- ${issue}`).join('\n')}`
}

export const invalidCallText = 'Invalid call.'

/**
 * What the model reads when a tool threw (or timed out): the one rule, shared by the machine and
 * the ledger. A remote host that refused the arguments is an invalid call, as the local check's:
 * the same outcome, and the same text when the host listed the issues.
 */
export function failedToolResult(error: unknown, toolName?: string): { output: string; isError: true; outcome: ToolOutcome } {
  const serialized = serializeError(error)
  if (serialized.code === ErrorCode.TOOL_INVALID_ARGUMENTS) {
    const issues = serialized.details?.issues
    const listed = Array.isArray(issues) && issues.length > 0 && issues.every((issue) => typeof issue === 'string')
    const output =
      listed && toolName !== undefined ? invalidArgumentsText(toolName, issues as string[]) : toolFailedText(serialized.message)
    return { output, isError: true, outcome: 'invalid_arguments' }
  }
  const timeout = serialized.code === ErrorCode.TIMEOUT || serialized.code === ErrorCode.TOOL_TIMEOUT
  return { output: toolFailedText(serialized.message), isError: true, outcome: timeout ? 'timeout' : 'failed' }
}
