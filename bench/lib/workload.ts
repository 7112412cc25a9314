/**
 * The workload every variant runs: one cheap no-op tool, and a fake model that asks for that
 * tool until the conversation holds N tool results, then answers. Nothing here sleeps: the model
 * answers at once, so what is left to measure is the loop and its transport.
 */
import { type Tool, tool } from '@signalbox/core'
import type { Responder, ScriptStep } from '@signalbox/core/testing'
import { z } from 'zod'

export const PROMPT = 'Call the noop tool until I tell you to stop.'
export const FINAL_ANSWER = 'done'

/** The one tool's arguments; the peer frameworks validate them with this same schema. */
export const noopSchema = z.object({ step: z.number().int() })
export const NOOP_DESCRIPTION = 'Does nothing and answers "ok".'
export const NOOP_RESULT = 'ok'

/** The one tool: validated by zod in signalbox, JSON-parsed in the bare loops (as the seed does). */
export const noopTool: Tool<{ step: number }> = tool({
  name: 'noop',
  description: NOOP_DESCRIPTION,
  schema: noopSchema,
  execute: async () => NOOP_RESULT,
})

/** The same JSON Schema signalbox sends, so every variant sends the same request bodies. */
export const toolSchemas = [
  {
    type: 'function' as const,
    function: { name: noopTool.name, description: noopTool.description, parameters: noopTool.parameters },
  },
]

/**
 * Model names carry the run length (`bench-200`), so one server answers every scenario; a
 * `-d<ms>` suffix (`bench-20-d50`) makes every answer take that long (a model's own latency).
 */
export const modelFor = (steps: number, delayMs?: number): string =>
  delayMs === undefined ? `bench-${steps}` : `bench-${steps}-d${delayMs}`

const stepsByModel = new Map<string, { steps: number; delayMs: number | undefined }>()
function stepsOf(model: string): { steps: number; delayMs: number | undefined } {
  let parsed = stepsByModel.get(model)
  if (parsed === undefined) {
    const match = /^bench-(\d+)(?:-d(\d+))?$/.exec(model)
    if (!match) throw new Error(`bench model names look like "bench-<steps>[-d<ms>]", got "${model}"`)
    parsed = { steps: Number(match[1]), delayMs: match[2] === undefined ? undefined : Number(match[2]) }
    stepsByModel.set(model, parsed)
  }
  return parsed
}

export function countToolResults(messages: readonly { role: string }[]): number {
  let n = 0
  for (const message of messages) if (message.role === 'tool') n++
  return n
}

/**
 * Fixed token counts: without them the scripted model estimates them from the whole transcript on
 * every call (O(transcript), the fake model's cost, not the loop's).
 */
const USAGE = { promptTokens: 100, completionTokens: 10 }

/** Tool call until the conversation has N tool results, then the final answer. */
export function nextStep(model: string, messages: readonly { role: string }[]): ScriptStep {
  const done = countToolResults(messages)
  const { steps, delayMs } = stepsOf(model)
  const step: ScriptStep =
    done >= steps
      ? { content: FINAL_ANSWER, usage: USAGE }
      : { toolCalls: [{ name: 'noop', arguments: { step: done } }], usage: USAGE }
  return delayMs === undefined ? step : { ...step, delayMs }
}

/** The responder for the scripted model server and the scripted provider (`model` picks N). */
export const responder: Responder = (request) => nextStep(request.model, request.messages)

/** Five hooks that do nothing, for the "with hooks" variants (signalbox's and the seed's shapes agree). */
export const noopHooks = {
  beforeTurn: async () => {},
  beforeProviderCall: async () => {},
  beforeToolExecution: async () => {},
  afterToolExecution: async () => {},
  afterTurn: async () => {},
}
