import { serializeError } from '../errors.ts'
import { deepFreeze } from '../events.ts'
import type { Message } from '../messages.ts'
import { OutputValidationError, outputRetryText } from '../output.ts'
import type { AgentContext } from './context.ts'
import type { AgentRuntime } from './runtime.ts'

/** The final answer's problems against the output schema; undefined when it fits or there is none. */
function answerIssues(context: AgentContext, runtime: AgentRuntime): string[] | undefined {
  if (!runtime.output || context.handoff || context.calls.length > 0) return undefined
  const checked = runtime.output.check(context.reply?.content ?? '')
  return checked.ok ? undefined : checked.issues
}

/** Guards of the final answer with an output schema: the model gets one retry, then the run fails. */
export function createOutputGuards(runtimeOf: (context: AgentContext) => AgentRuntime) {
  return {
    answerNeedsRetry: ({ context }: { context: AgentContext }) =>
      (context.model.invalidAnswers ?? 0) < 1 && answerIssues(context, runtimeOf(context)) !== undefined,
    answerInvalid: ({ context }: { context: AgentContext }) => answerIssues(context, runtimeOf(context)) !== undefined,
  }
}

/** The model reads what was wrong with its answer, and answers again. */
export function askForValidAnswer(context: AgentContext, runtime: AgentRuntime): Partial<AgentContext> {
  const message: Message = deepFreeze({ role: 'user', content: outputRetryText(answerIssues(context, runtime) ?? []) })
  return {
    messages: [...context.messages, message],
    model: { ...context.model, invalidAnswers: (context.model.invalidAnswers ?? 0) + 1 },
  }
}

export function failWithInvalidAnswer(context: AgentContext, runtime: AgentRuntime): Partial<AgentContext> {
  const error = new OutputValidationError(answerIssues(context, runtime) ?? [], context.reply?.content ?? '')
  return { error: serializeError(error), stopReason: 'invalid_output' }
}
