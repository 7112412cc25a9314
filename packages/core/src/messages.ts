/** The transcript, in the chat-completions wire shape so it goes to any endpoint unchanged. */
export interface ToolCall {
  id: string
  type: 'function'
  function: { name: string; arguments: string }
}

export interface SystemMessage {
  role: 'system'
  content: string
}
export interface UserMessage {
  role: 'user'
  content: string
}
export interface AssistantMessage {
  role: 'assistant'
  content: string | null
  tool_calls?: ToolCall[]
}
export interface ToolMessage {
  role: 'tool'
  tool_call_id: string
  content: string
}

export type Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage

export interface Usage {
  promptTokens: number
  completionTokens: number
  totalTokens: number
}

export const emptyUsage = (): Usage => ({ promptTokens: 0, completionTokens: 0, totalTokens: 0 })

export function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (!b) return a
  return {
    promptTokens: a.promptTokens + b.promptTokens,
    completionTokens: a.completionTokens + b.completionTokens,
    totalTokens: a.totalTokens + b.totalTokens,
  }
}
