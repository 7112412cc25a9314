/**
 * signalbox's transcript (chat-completions shape) as an AI SDK prompt, and the request's tools
 * and answer format as call options: what any `LanguageModelV3` takes.
 */
import type {
  JSONSchema7,
  LanguageModelV3CallOptions,
  LanguageModelV3FunctionTool,
  LanguageModelV3Message,
  LanguageModelV3Prompt,
  LanguageModelV3ToolResultPart,
} from '@ai-sdk/provider'
import type { Message, ProviderRequest } from '@signalbox/core'
import { perToolList } from '@signalbox/core/internal'

/** The call options a request makes; the caller adds the signal and its own settings. */
export function callOptionsOf(
  request: ProviderRequest,
): Pick<LanguageModelV3CallOptions, 'prompt' | 'tools' | 'toolChoice' | 'responseFormat'> {
  return {
    prompt: toPrompt(request.messages),
    ...(request.tools.length > 0 ? { tools: toolsOf(request.tools), toolChoice: { type: 'auto' } } : {}),
    ...(request.responseFormat
      ? {
          responseFormat: {
            type: 'json',
            name: request.responseFormat.name,
            schema: request.responseFormat.schema as JSONSchema7,
          },
        }
      : {}),
  }
}

/**
 * A tool result names its tool in the AI SDK (the chat-completions shape only names the call):
 * the name comes from the assistant message that made the call. Consecutive tool messages become
 * one, as the AI SDK itself builds them.
 */
export function toPrompt(messages: readonly Message[]): LanguageModelV3Prompt {
  const prompt: LanguageModelV3Prompt = []
  const toolNames = new Map<string, string>()
  for (const message of messages) {
    switch (message.role) {
      case 'system':
        prompt.push({ role: 'system', content: message.content })
        break
      case 'user':
        prompt.push({ role: 'user', content: [{ type: 'text', text: message.content }] })
        break
      case 'assistant': {
        const content: Extract<LanguageModelV3Message, { role: 'assistant' }>['content'] = []
        if (message.content) content.push({ type: 'text', text: message.content })
        for (const call of message.tool_calls ?? []) {
          toolNames.set(call.id, call.function.name)
          content.push({
            type: 'tool-call',
            toolCallId: call.id,
            toolName: call.function.name,
            input: parseArguments(call.function.arguments),
          })
        }
        prompt.push({ role: 'assistant', content })
        break
      }
      case 'tool': {
        const part: LanguageModelV3ToolResultPart = {
          type: 'tool-result',
          toolCallId: message.tool_call_id,
          toolName: toolNames.get(message.tool_call_id) ?? 'unknown',
          output: { type: 'text', value: message.content },
        }
        const last = prompt.at(-1)
        if (last?.role === 'tool') last.content.push(part)
        else prompt.push({ role: 'tool', content: [part] })
        break
      }
    }
  }
  return prompt
}

/** The arguments as the model wrote them: JSON when they are, else the text (a malformed call the model is told about). */
function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/** Built once per tool list (an agent sends the same list on every call). */
const toolsOf = perToolList(
  (spec): LanguageModelV3FunctionTool => ({
    type: 'function',
    name: spec.name,
    description: spec.description,
    inputSchema: spec.parameters as JSONSchema7,
  }),
)
