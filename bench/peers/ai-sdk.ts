/** The Vercel AI SDK: `generateText` with the one tool, on its OpenAI-compatible chat provider. */
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { generateText, stepCountIs, tool } from 'ai'
import { NOOP_DESCRIPTION, NOOP_RESULT, noopSchema, PROMPT } from '../lib/workload.ts'
import { checkedRun, type RunCounter } from './check.ts'
import type { PeerOptions, PeerRun } from './options.ts'

export function aiSdkRun({ url, model, apiKey, steps }: PeerOptions): PeerRun {
  const chat = createOpenAICompatible({ name: 'bench', baseURL: url, apiKey }).chatModel(model)
  const tools = {
    noop: tool({
      description: NOOP_DESCRIPTION,
      inputSchema: noopSchema,
      execute: async (_input, { experimental_context }) => {
        ;(experimental_context as RunCounter).executed++
        return NOOP_RESULT
      },
    }),
  }
  return async () => {
    const counter: RunCounter = { executed: 0 }
    const result = await generateText({
      model: chat,
      prompt: PROMPT,
      tools,
      // One more step than tool steps: the last one is the answer.
      stopWhen: stepCountIs(steps + 1),
      maxRetries: 0,
      experimental_context: counter,
    })
    return checkedRun('AI SDK', steps, result.text, counter)
  }
}
