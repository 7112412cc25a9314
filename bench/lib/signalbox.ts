/** The system under test: a signalbox agent with the one no-op tool, with or without five no-op hooks. */
import { type Agent, createAgent, type Provider, type Tool } from '@signalbox/core'
import { countToolResults, FINAL_ANSWER, noopHooks, noopTool, PROMPT } from './workload.ts'

export function benchAgent(provider: Provider, withHooks: boolean, tools: Tool<{ step: number }>[] = [noopTool]): Agent {
  return createAgent({ provider, tools, maxTurns: 1000, ...(withHooks ? { hooks: noopHooks } : {}) })
}

/** One run to the final answer; returns the tool steps it took. */
export async function runAgent(agent: Agent): Promise<number> {
  const result = await agent.run(PROMPT)
  if (result.output !== FINAL_ANSWER)
    throw new Error(`signalbox run ended with ${result.status}: ${JSON.stringify(result.output)}`)
  return countToolResults(result.messages)
}
