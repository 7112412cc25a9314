/** The OpenAI Agents SDK: `Agent` + `run` on the chat-completions model, tracing off. */
import { Agent, OpenAIChatCompletionsModel, type RunContext, run, setTracingDisabled, tool } from '@openai/agents'
import OpenAI from 'openai'
import { NOOP_DESCRIPTION, NOOP_RESULT, noopSchema, PROMPT } from '../lib/workload.ts'
import { checkedRun, type RunCounter } from './check.ts'
import type { PeerOptions, PeerRun } from './options.ts'

export function openaiAgentsRun({ url, model, apiKey, steps }: PeerOptions): PeerRun {
  setTracingDisabled(true)
  const client = new OpenAI({ baseURL: url, apiKey, maxRetries: 0 })
  const agent = new Agent<RunCounter>({
    name: 'bench',
    model: new OpenAIChatCompletionsModel(client, model),
    tools: [
      tool({
        name: 'noop',
        description: NOOP_DESCRIPTION,
        parameters: noopSchema,
        execute: async (_input, context?: RunContext<RunCounter>) => {
          context!.context.executed++
          return NOOP_RESULT
        },
      }),
    ],
  })
  return async () => {
    const counter: RunCounter = { executed: 0 }
    // A turn is one model call: the tool steps plus the answer.
    const result = await run(agent, PROMPT, { context: counter, maxTurns: steps + 1 })
    return checkedRun('OpenAI Agents SDK', steps, result.finalOutput, counter)
  }
}
