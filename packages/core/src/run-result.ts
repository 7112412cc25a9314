import type { RunResult } from './agent-options.ts'
import type { AgentOutput } from './machine/context.ts'
import type { Message } from './messages.ts'

/** On a hand-off the next agent brings its own instructions: the system prompt stays here. */
const defaultHandoffFilter = (messages: readonly Message[]) => messages.filter((m) => m.role !== 'system')

/** A finished run's result, from the machine's output; a hand-off carries the transcript the next agent reads. */
export function toRunResult(
  runId: string,
  output: AgentOutput,
  filter: ((messages: readonly Message[]) => Message[]) | undefined,
): RunResult {
  return {
    ...(output.handoff ? { handoff: { ...output.handoff, messages: (filter ?? defaultHandoffFilter)(output.messages) } } : {}),
    runId,
    status: output.status,
    output: output.output ?? '',
    stopReason: output.stopReason,
    error: output.error,
    turns: output.turns,
    usage: output.usage,
    messages: output.messages,
    pendingSteering: output.pendingSteering,
  }
}
