/** LangGraph.js: the prebuilt `createReactAgent` on LangChain's `ChatOpenAI`. */
import { tool } from '@langchain/core/tools'
import { createReactAgent } from '@langchain/langgraph/prebuilt'
import { ChatOpenAI } from '@langchain/openai'
import { NOOP_DESCRIPTION, NOOP_RESULT, noopSchema, PROMPT } from '../lib/workload.ts'
import { checkedRun, type RunCounter } from './check.ts'
import type { PeerOptions, PeerRun } from './options.ts'

export function langGraphRun({ url, model, apiKey, steps }: PeerOptions): PeerRun {
  const llm = new ChatOpenAI({ model, apiKey, maxRetries: 0, streaming: false, configuration: { baseURL: url } })
  const noop = tool(
    async (_input, config) => {
      ;(config.configurable as { counter: RunCounter }).counter.executed++
      return NOOP_RESULT
    },
    { name: 'noop', description: NOOP_DESCRIPTION, schema: noopSchema },
  )
  const agent = createReactAgent({ llm, tools: [noop] })
  return async () => {
    const counter: RunCounter = { executed: 0 }
    // Each tool step is two graph steps (model, tools), plus the answering model call.
    const result = await agent.invoke(
      { messages: [{ role: 'user', content: PROMPT }] },
      { recursionLimit: 2 * steps + 5, configurable: { counter } },
    )
    return checkedRun('LangGraph.js', steps, result.messages.at(-1)?.content, counter)
  }
}
