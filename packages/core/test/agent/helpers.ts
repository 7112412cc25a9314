/**
 * Shared helpers for the agent runtime tests: deferreds, a provider the test drives by hand,
 * event recording, and unwrapping a failed run.
 */

import {
  type Agent,
  type AgentEvent,
  type AgentEventType,
  type Message,
  type Provider,
  type ProviderCallOptions,
  type ProviderRequest,
  type ProviderResponse,
  RunFailedError,
  type ToolMessage,
  tool,
} from '@signalbox/core'
import { expect } from 'vitest'
import { z } from 'zod'

export interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
  reject(error: unknown): void
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

/** Records every event of an agent, in order. */
export function recordEvents(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = []
  agent.on('*', (event) => events.push(event))
  return events
}

export const typesOf = (events: AgentEvent[]): AgentEventType[] => events.map((e) => e.type)

export function eventsOf<T extends AgentEventType>(events: AgentEvent[], type: T): Extract<AgentEvent, { type: T }>[] {
  return events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type)
}

/** Awaits a run that must fail or be cancelled, and returns its `RunFailedError`. */
export async function runFailure(promise: Promise<unknown>): Promise<RunFailedError> {
  const error = await promise.then(
    () => {
      throw new Error('expected the run to fail, it succeeded')
    },
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(RunFailedError)
  return error as RunFailedError
}

/** The tool messages of a transcript, keyed by call id. */
export function toolMessages(messages: Message[]): ToolMessage[] {
  return messages.filter((m): m is ToolMessage => m.role === 'tool')
}

/** What the model read for a given call, in the transcript of the request it was sent in. */
export function toolResultIn(messages: Message[], callId: string): string | undefined {
  return toolMessages(messages).find((m) => m.tool_call_id === callId)?.content
}

/**
 * A provider the test answers by hand: each `complete` waits until the test calls
 * `reply(...)`. Records every request and every signal it was given.
 */
export class ManualProvider implements Provider {
  readonly model = 'manual'
  readonly requests: ProviderRequest[] = []
  readonly signals: AbortSignal[] = []
  readonly #pending: Deferred<ProviderResponse>[] = []
  readonly #waiters: Deferred<void>[] = []

  complete(request: ProviderRequest, options: ProviderCallOptions): Promise<ProviderResponse> {
    this.requests.push(JSON.parse(JSON.stringify(request)) as ProviderRequest)
    this.signals.push(options.signal)
    const d = deferred<ProviderResponse>()
    options.signal.addEventListener('abort', () => d.reject(options.signal.reason), { once: true })
    this.#pending.push(d)
    for (const w of this.#waiters.splice(0)) w.resolve()
    return d.promise
  }

  /** Resolves once `n` calls have been made in total. */
  async called(n: number): Promise<void> {
    while (this.requests.length < n) {
      const w = deferred()
      this.#waiters.push(w)
      await w.promise
    }
  }

  /** Answers the oldest unanswered call. */
  reply(response: { content?: string | null; toolCalls?: { id: string; name: string; arguments: unknown }[] }): void {
    const d = this.#pending.shift()
    if (!d) throw new Error('ManualProvider: no pending call to answer')
    const calls = response.toolCalls ?? []
    d.resolve({
      message:
        calls.length > 0
          ? {
              role: 'assistant',
              content: response.content ?? null,
              tool_calls: calls.map((c) => ({
                id: c.id,
                type: 'function',
                function: {
                  name: c.name,
                  arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
                },
              })),
            }
          : { role: 'assistant', content: response.content ?? '' },
      finishReason: calls.length > 0 ? 'tool_calls' : 'stop',
      usage: { promptTokens: 1, completionTokens: 1, totalTokens: 2 },
      model: this.model,
    })
  }
}

/** A tool that records its calls and returns `result(args)`. */
export function recordingTool(name: string, result: (args: { x?: string }) => unknown = (args) => `${name}:${args.x ?? ''}`) {
  const calls: { x?: string }[] = []
  const t = tool({
    name,
    description: `The ${name} tool.`,
    schema: z.object({ x: z.string().optional() }),
    execute: (args) => {
      calls.push(args)
      return result(args)
    },
  })
  return { tool: t, calls }
}

/** Lets pending promise callbacks run (no timers involved). */
export async function flush(times = 5): Promise<void> {
  for (let i = 0; i < times; i++) await new Promise<void>((resolve) => setImmediate(resolve))
}
