/**
 * Agent events as the console shows them: what happened to which call, never message contents,
 * arguments, outputs or steering text unless the console was started with contents allowed.
 */
import { z } from 'zod/v4'
import type { EventView } from './view-model.ts'

/** The fields the console reads from an event; anything else on the bus is ignored. */
export const ObservedEvent = z.looseObject({
  type: z.string().min(1).max(128),
  agentId: z.string().min(1).max(256),
  runId: z.string().min(1).max(256),
  at: z.number().finite(),
  runPath: z.array(z.string().max(256)).max(64).optional(),
  agentPath: z.array(z.string().max(256)).max(64).optional(),
  parentRunId: z.string().max(256).optional(),
  toolName: z.string().max(256).optional(),
  callId: z.string().max(256).optional(),
  outcome: z.string().max(64).optional(),
  status: z.string().max(64).optional(),
  turn: z.number().optional(),
})
export type ObservedEvent = z.infer<typeof ObservedEvent>

const MAX_DETAIL = 600

export function eventView(event: ObservedEvent, includeContents: boolean): EventView {
  const parts: string[] = []
  if (event.toolName) parts.push(event.toolName)
  if (event.outcome) parts.push(event.outcome)
  if (event.status) parts.push(event.status)
  if (event.turn !== undefined && !event.toolName) parts.push(`turn ${event.turn}`)
  const record = event as Record<string, unknown>
  const decision = record.decision as { approved?: unknown; reviewer?: unknown } | undefined
  if (decision && typeof decision === 'object') {
    parts.push(`${decision.approved === true ? 'approved' : 'denied'} by ${String(decision.reviewer ?? '?')}`)
  }
  if (typeof record.answeredBy === 'string') parts.push(`by ${record.answeredBy}`)
  if (typeof record.from === 'string') parts.push(`from ${record.from}`)
  const view: EventView = {
    type: event.type,
    at: event.at,
    ...(event.toolName ? { toolName: event.toolName } : {}),
    summary: parts.join(' · '),
  }
  if (includeContents) {
    const content = contentOf(record)
    if (content !== undefined) view.detail = clip(typeof content === 'string' ? content : JSON.stringify(content))
  }
  return view
}

function contentOf(event: Record<string, unknown>): unknown {
  for (const key of ['arguments', 'output', 'input', 'text', 'answer', 'reason', 'delta']) {
    if (event[key] !== undefined) return event[key]
  }
  const message = event.message as { content?: unknown } | undefined
  if (message && typeof message === 'object' && message.content) return message.content
  return undefined
}

function clip(text: string): string {
  return text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text
}
