/**
 * Each run's conversation as the console shows it with contents allowed (`--contents`): the
 * messages of the run's latest model request, then the model's reply, read from the run's events.
 * Kept for the most recent runs only, every text cut, so a long transcript stays a small message.
 */
import { z } from 'zod/v4'
import type { MessageView } from './view-model.ts'

const MAX_RUNS = 50
const MAX_MESSAGES = 40
const MAX_TEXT = 2_000

const WireMessage = z.looseObject({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().nullish(),
  tool_calls: z
    .array(z.looseObject({ function: z.looseObject({ name: z.string().max(256), arguments: z.string() }) }))
    .max(128)
    .optional(),
})
const ModelRequest = z.looseObject({ type: z.literal('model.request'), messages: z.array(z.unknown()).max(10_000) })
const ModelResponse = z.looseObject({ type: z.literal('model.response'), message: z.unknown() })

export interface RunTranscripts {
  /** The run's conversation after `event`, when `event` changed it. */
  update(runId: string, event: unknown): MessageView[] | undefined
  snapshot(): Record<string, MessageView[]>
}

export function createRunTranscripts(): RunTranscripts {
  const transcripts = new Map<string, MessageView[]>()
  const keep = (runId: string, messages: MessageView[]) => {
    transcripts.delete(runId)
    transcripts.set(runId, messages.slice(-MAX_MESSAGES))
    if (transcripts.size > MAX_RUNS) transcripts.delete(transcripts.keys().next().value as string)
    return transcripts.get(runId) as MessageView[]
  }
  return {
    update(runId, event) {
      const request = ModelRequest.safeParse(event)
      if (request.success) return keep(runId, request.data.messages.slice(-MAX_MESSAGES).flatMap(view))
      const response = ModelResponse.safeParse(event)
      if (response.success) return keep(runId, [...(transcripts.get(runId) ?? []), ...view(response.data.message)])
      return undefined
    },
    snapshot: () => Object.fromEntries(transcripts),
  }
}

function view(raw: unknown): MessageView[] {
  const parsed = WireMessage.safeParse(raw)
  if (!parsed.success) return []
  const { role, content, tool_calls: calls } = parsed.data
  const parts = [content ?? '', ...(calls ?? []).map((call) => `→ ${call.function.name}(${call.function.arguments})`)]
  const text = parts.filter(Boolean).join('\n')
  return [{ role, text: text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text }]
}
