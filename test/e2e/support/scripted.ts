import {
  type Agent,
  type AgentEvent,
  type AgentEventOf,
  type AgentEventType,
  type Message,
  OpenAIProvider,
  type ToolCall,
} from '@signalbox/core'
import { type RecordedRequest, type ScriptedModelServer, type Scripts, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEveryTest } from '../../support/lifecycle.ts'

const open: ScriptedModelServer[] = []
afterEveryTest(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()))
})

/**
 * The scripted model server on a free port (closed after the test), and a real `OpenAIProvider`
 * (the openai SDK, over HTTP) pointed at it for one scripted conversation.
 */
export async function scriptedModel(
  scripts: Scripts,
): Promise<{ server: ScriptedModelServer; provider: (model: string) => OpenAIProvider }> {
  const server = await startScriptedModelServer({ scripts })
  open.push(server)
  return { server, provider: (model) => new OpenAIProvider({ baseURL: server.url, apiKey: 'e2e-key', model }) }
}

/** Every event the agent emits, in order. */
export function recordEvents(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = []
  agent.on('*', (event) => {
    events.push(event)
  })
  return events
}

export function eventsOf<T extends AgentEventType>(events: AgentEvent[], type: T): AgentEventOf<T>[] {
  return events.filter((event): event is AgentEventOf<T> => event.type === type)
}

/** The tool calls the model made, in order, as the transcript records them. */
export function toolCallsIn(messages: Message[]): ToolCall[] {
  return messages.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []))
}

/** The one call to `name` (fails if there is not exactly one). */
export function onlyCall(messages: Message[], name: string, args?: Record<string, unknown>): ToolCall {
  const calls = toolCallsIn(messages).filter(
    (c) =>
      c.function.name === name &&
      (args === undefined || JSON.stringify(JSON.parse(c.function.arguments)) === JSON.stringify(args)),
  )
  if (calls.length !== 1)
    throw new Error(`expected exactly one call to ${name}${args ? ` ${JSON.stringify(args)}` : ''}, got ${calls.length}`)
  return calls[0] as ToolCall
}

/** The last message of a request the model received. */
export function lastMessage(request: RecordedRequest | undefined): Message | undefined {
  return request?.messages.at(-1)
}
