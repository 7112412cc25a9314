/**
 * The baselines: the seed's hand-written loop ("TypeScript", from scratch, in
 * ../shared/seeds/000_*), unchanged except that the model call is a parameter, so the same loop
 * runs on plain fetch, on the `openai` SDK (streaming or not) and in-process.
 */
import type { ScriptedProvider, ScriptStep } from '@signalbox/core/testing'
import type OpenAI from 'openai'
import { noopTool, toolSchemas } from './workload.ts'

type ToolCall = { id: string; type: 'function'; function: { name: string; arguments: string } }
export type Message =
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string }

type Args = Record<string, string | number>
type ToolFn = (args: Args) => Promise<string>
// The same execute function signalbox runs (it ignores its context).
const tools: Record<string, ToolFn> = {
  noop: (args) => noopTool.execute(args as { step: number }, undefined as never) as Promise<string>,
}

/** One model call: what the seed's loop does with `fetch` inline. */
export type Chat = (messages: Message[]) => Promise<{ message: Message; finishReason: string }>

// The seed's hook types, loosened so a hook may return nothing (as the no-op hooks do).
type Maybe<T> = Promise<T | undefined> | Promise<void>
type Hooks = {
  beforeTurn?: (turn: number, messages: Message[]) => Promise<void>
  beforeProviderCall?: (messages: Message[]) => Maybe<Message[]>
  beforeToolExecution?: (name: string, args: Args) => Maybe<{ authorize: boolean; result?: string }>
  afterToolExecution?: (name: string, output: string) => Maybe<string>
  afterTurn?: (turn: number, reply: Message) => Promise<void>
}

/** The seed's `runAgent`; returns the number of tool steps it ran (checked by the caller). */
export async function runBareLoop(chat: Chat, prompt: string, hooks: Hooks = {}, maxTurns = 1000): Promise<number> {
  const messages: Message[] = [{ role: 'user', content: prompt }]
  let steps = 0

  for (let turn = 1; turn <= maxTurns; turn++) {
    await hooks.beforeTurn?.(turn, messages)
    const outgoing = (await hooks.beforeProviderCall?.(messages)) ?? messages

    const { message: reply, finishReason } = await chat(outgoing)
    messages.push(reply)

    if (finishReason !== 'tool_calls' || reply.role !== 'assistant') {
      await hooks.afterTurn?.(turn, reply)
      return steps
    }

    for (const call of reply.tool_calls ?? []) {
      const name = call.function.name
      const run = tools[name]
      let output = `Unknown tool: ${name}`
      try {
        const args: Args = JSON.parse(call.function.arguments)
        const gate = (await hooks.beforeToolExecution?.(name, args)) ?? { authorize: true }
        if (!gate.authorize) output = gate.result ?? 'Rejected by policy.'
        else if (run) output = await run(args)
      } catch (err) {
        output = `Error: ${err instanceof Error ? err.message : err}`
      }
      output = (await hooks.afterToolExecution?.(name, output)) ?? output
      messages.push({ role: 'tool', tool_call_id: call.id, content: output })
      steps++
    }
    await hooks.afterTurn?.(turn, reply)
  }
  throw new Error(`No answer after ${maxTurns} turns`)
}

/** The seed's model call, verbatim: plain fetch, JSON, no SDK. */
export function fetchChat(baseURL: string, model: string, apiKey: string): Chat {
  return async (messages) => {
    const res = await fetch(`${baseURL}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ model, messages, tools: toolSchemas }),
    })
    const [choice] = ((await res.json()) as { choices: { message: Message; finish_reason: string }[] }).choices
    if (!choice) throw new Error('no choices')
    return { message: choice.message, finishReason: choice.finish_reason }
  }
}

/** The same call on the `openai` client signalbox uses (one attempt, no SDK retries). */
export function openaiChat(client: OpenAI, model: string): Chat {
  return async (messages) => {
    const completion = await client.chat.completions.create({ model, messages, tools: toolSchemas })
    const choice = completion.choices[0]
    if (!choice) throw new Error('no choices')
    return { message: choice.message as Message, finishReason: choice.finish_reason }
  }
}

/** Streaming on the `openai` client, assembling tool-call deltas by hand, with usage (as signalbox asks). */
export function openaiStreamChat(client: OpenAI, model: string): Chat {
  return async (messages) => {
    const stream = await client.chat.completions.create({
      model,
      messages,
      tools: toolSchemas,
      stream: true,
      stream_options: { include_usage: true },
    })
    let content: string | null = null
    let finishReason = 'stop'
    const calls: ToolCall[] = []
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        const delta = choice.delta
        if (delta?.content) content = (content ?? '') + delta.content
        for (const part of delta?.tool_calls ?? []) {
          let call = calls[part.index]
          if (!call) {
            call = { id: '', type: 'function', function: { name: '', arguments: '' } }
            calls[part.index] = call
          }
          if (part.id) call.id = part.id
          if (part.function?.name) call.function.name += part.function.name
          if (part.function?.arguments) call.function.arguments += part.function.arguments
        }
        if (choice.finish_reason) finishReason = choice.finish_reason
      }
    }
    const message: Message = calls.length > 0 ? { role: 'assistant', content, tool_calls: calls } : { role: 'assistant', content }
    return { message, finishReason }
  }
}

/**
 * In-process, no transport: the bare loop calls the responder itself and turns its step into a
 * reply (the least any loop must do). This is the floor signalbox's in-process figure is held to.
 */
export function responderChat(model: string, respond: (model: string, messages: Message[]) => ScriptStep): Chat {
  let ids = 0
  return async (messages) => {
    const step = respond(model, messages)
    if ('error' in step) throw new Error(step.error.message)
    const toolCalls = (step.toolCalls ?? []).map(
      (call): ToolCall => ({
        id: call.id ?? `call_${++ids}`,
        type: 'function',
        function: {
          name: call.name,
          arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
        },
      }),
    )
    if (toolCalls.length > 0)
      return { message: { role: 'assistant', content: step.content ?? null, tool_calls: toolCalls }, finishReason: 'tool_calls' }
    return { message: { role: 'assistant', content: step.content ?? '' }, finishReason: 'stop' }
  }
}

/** In-process through the very `ScriptedProvider` object signalbox is given: isolates the runtime's cost. */
export function providerChat(provider: ScriptedProvider): Chat {
  const tools = [{ name: noopTool.name, description: noopTool.description, parameters: noopTool.parameters }]
  const signal = new AbortController().signal
  return async (messages) => {
    const response = await provider.complete({ messages: messages as never, tools }, { signal })
    return { message: response.message as Message, finishReason: response.finishReason }
  }
}
