import {
  describeError,
  FatalToolError,
  handoff,
  type Message,
  sleep,
  type Tool,
  tool,
  ToolError,
} from '@signalbox/core'
import { z } from 'zod'
import type { AgentSystem } from './agent-system.ts'

export type ChildFailurePolicy =
  /** The model reads the child's error as the tool result and decides (default). */
  | { onFailure: 'report' }
  /** Try again with exponential backoff, then report. */
  | { onFailure: 'retry'; retries?: number; backoffMs?: number }
  /** The parent run fails too. */
  | { onFailure: 'give-up' }

export interface DelegateOptions {
  /** Tool name the parent's model calls. Default `ask_<agentId>`. */
  name?: string
  description?: string
  failure?: ChildFailurePolicy
}

/**
 * An agent as a tool: the child runs its own loop (own hooks, approvals, limits) wherever it
 * lives; its final answer is the tool result. Cancelling the parent cancels the child.
 */
export function delegateTool(system: AgentSystem, agentId: string, options: DelegateOptions = {}): Tool<{ task: string }> {
  const policy = options.failure ?? { onFailure: 'report' }
  return tool({
    name: options.name ?? `ask_${agentId}`.replaceAll('-', '_'),
    description: options.description ?? `Delegate a task to the "${agentId}" agent and get its final answer.`,
    schema: z.object({ task: z.string().min(1).describe('What the agent should do, with everything it needs to know.') }),
    execute: async ({ task }, context) => {
      const attempts = policy.onFailure === 'retry' ? 1 + (policy.retries ?? 2) : 1
      let lastError: unknown
      for (let attempt = 1; attempt <= attempts; attempt++) {
        try {
          const result = await system.run(agentId, task, {
            signal: context.signal,
            parentRunId: context.runId,
            runPath: [...context.runPath, context.runId],
          })
          return result.finishedBy === agentId ? result.output : `${result.output}\n(answered by ${result.finishedBy})`
        } catch (error) {
          if (context.signal.aborted) throw error
          lastError = error
          if (attempt < attempts && policy.onFailure === 'retry') {
            await sleep((policy.backoffMs ?? 500) * 2 ** (attempt - 1), { clock: context.clock, signal: context.signal })
          }
        }
      }
      const code = (lastError as { code?: string })?.code ?? 'CHILD_FAILED'
      const message = `The "${agentId}" agent failed${attempts > 1 ? ` after ${attempts} attempts` : ''}: ${describeError(lastError)}`
      if (policy.onFailure === 'give-up') throw new FatalToolError(code, message, { cause: lastError })
      throw new ToolError(code, message, { cause: lastError })
    },
  })
}

/** What history goes along on a hand-off. */
export type HandoffFilter = (messages: readonly Message[]) => Message[]

export const handoffFilters = {
  /** Everything but the system prompt (the next agent brings its own). */
  conversation: ((messages) => messages.filter((m) => m.role !== 'system')) as HandoffFilter,
  /** The person's and the agents' words only: no tool calls or results. */
  withoutTools: ((messages) =>
    messages
      .filter((m) => m.role === 'user' || (m.role === 'assistant' && m.content))
      .map((m) => (m.role === 'assistant' ? { role: 'assistant' as const, content: m.content } : m))) as HandoffFilter,
  /** Only the person's last message. */
  lastUserMessage: ((messages) => {
    const last = [...messages].reverse().find((m) => m.role === 'user')
    return last ? [last] : []
  }) as HandoffFilter,
}

/**
 * A tool that hands the conversation over to another agent: this run ends, the other agent
 * continues with the (filtered) history, and the result says who finished.
 */
export function handoffTool(agentId: string, options: { name?: string; description?: string; filter?: HandoffFilter } = {}): Tool<{ reason?: string }> {
  return tool({
    name: options.name ?? `transfer_to_${agentId}`.replaceAll('-', '_'),
    description: options.description ?? `Hand the conversation over to the "${agentId}" agent, who will answer the person from here.`,
    schema: z.object({ reason: z.string().optional().describe('Why, in a few words.') }),
    execute: async ({ reason }) => handoff(agentId, { ...(reason ? { reason } : {}), filter: options.filter ?? handoffFilters.conversation }),
  })
}
