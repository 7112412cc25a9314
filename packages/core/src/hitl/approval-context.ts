/**
 * What a reviewer is told about why a call is asked: the tool's description and what led to the
 * call (the run's input, the model's last text). Read from the run's transcript when the request
 * is made; every text is cut so a request stays small on the bus.
 */
import type { Message } from '../messages.ts'
import type { ApprovalContext, ApprovalRequest } from './types.ts'

export const APPROVAL_CONTEXT_MAX_CHARS = 2_000

export function approvalExtras(options: {
  description: string | undefined
  input: string
  messages: readonly Message[]
  reply: { content: string | null } | undefined
}): Pick<ApprovalRequest, 'description' | 'context'> {
  const context: ApprovalContext = {}
  if (options.input.trim()) context.input = clip(options.input)
  const lastText = options.reply?.content?.trim() ? options.reply.content : lastAssistantText(options.messages)
  if (lastText) context.lastText = clip(lastText)
  return {
    ...(options.description?.trim() ? { description: clip(options.description) } : {}),
    ...(Object.keys(context).length > 0 ? { context } : {}),
  }
}

function lastAssistantText(messages: readonly Message[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (message?.role === 'assistant' && message.content?.trim()) return message.content
  }
  return undefined
}

function clip(text: string): string {
  return text.length > APPROVAL_CONTEXT_MAX_CHARS ? `${text.slice(0, APPROVAL_CONTEXT_MAX_CHARS - 1)}…` : text
}
