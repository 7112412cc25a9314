import { AbortedError, ErrorCode, FatalToolError, handoff, type Message, type Tool, ToolError, tool } from '@signalbox/core'
import { backoffDelay, describeError, sleep } from '@signalbox/core/internal'
import { z } from 'zod/v4'
import { type AgentSystem, derivedRunId } from './agent-system.ts'
import { fanOut } from './fan-out.ts'

export type ChildFailurePolicy =
  /** The model reads the child's error as the tool result and decides (default). */
  | { onFailure: 'report' }
  /** Try again with exponential backoff, then report. */
  | { onFailure: 'retry'; retries?: number; backoffMs?: number }
  /** The parent run fails too. */
  | { onFailure: 'give-up' }

const NOT_RETRYABLE = new Set<string>([ErrorCode.TREE_DEPTH_EXCEEDED, ErrorCode.TREE_BUDGET_EXCEEDED, ErrorCode.HANDOFF_LIMIT])

/** The call, named the same in any process: its turn (call ids may be numbered per reply) and its id. */
function callKey(context: { turn?: number; callId: string }): string {
  return context.turn === undefined ? context.callId : `${context.turn}:${context.callId}`
}

export interface DelegateOptions {
  /** Tool name the parent's model calls. Default `ask_<agentId>`. */
  name?: string
  description?: string
  failure?: ChildFailurePolicy
  /** Milliseconds before the call times out: the child is cancelled, the model reads a timeout. */
  timeoutMs?: number
}

/**
 * An agent as a tool: the child runs its own loop (own hooks, approvals, limits) wherever it
 * lives; its final answer is the tool result. Cancelling the parent cancels the child.
 *
 * The child's run id is derived from the parent's run and the call (and the attempt), so the
 * call is idempotent: a parent resumed after a crash or taken over by another host runs the call
 * again and re-attaches to the same child (its stored result, or the host that runs it now)
 * instead of starting a second one; a child found nowhere fails the call with `CHILD_LOST`.
 */
export function delegateTool(system: AgentSystem<any>, agentId: string, options: DelegateOptions = {}): Tool<{ task: string }> {
  const policy = options.failure ?? { onFailure: 'report' }
  return tool({
    name: options.name ?? `ask_${agentId}`.replaceAll('-', '_'),
    description: options.description ?? `Delegate a task to the "${agentId}" agent and get its final answer.`,
    schema: z.object({ task: z.string().min(1).describe('What the agent should do, with everything it needs to know.') }),
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    // Run again after a crash, it finds its child by id (see above): never a second child.
    idempotent: true,
    execute: async ({ task }, context) => {
      const attempts = policy.onFailure === 'retry' ? 1 + (policy.retries ?? 2) : 1
      let lastError: unknown
      let tried = 0
      for (let attempt = 1; attempt <= attempts; attempt++) {
        tried = attempt
        try {
          const result = await system.run(agentId, task, {
            signal: context.signal,
            parentRunId: context.runId,
            runPath: [...context.runPath, context.runId],
            agentPath: [...(context.agentPath ?? []), context.agentId],
            runId: derivedRunId(context.runId, callKey(context), attempt),
            // The first attempt was asked for before the crash; a later one may not have been.
            ...(context.rerun ? { reattach: attempt === 1 ? ('only' as const) : ('first' as const) } : {}),
          })
          const output = typeof result.output === 'string' ? result.output : JSON.stringify(result.output)
          return result.finishedBy === agentId ? output : `${output}\n(answered by ${result.finishedBy})`
        } catch (error) {
          if (context.signal.aborted) throw error
          lastError = error
          // A refusal by the tree's limits will not change on a second try.
          if (NOT_RETRYABLE.has((error as { code?: string })?.code ?? '')) break
          if (attempt < attempts && policy.onFailure === 'retry') {
            await sleep(backoffDelay(attempt, { baseDelayMs: policy.backoffMs ?? 500, jitter: false }), {
              clock: context.clock,
              signal: context.signal,
            })
          }
        }
      }
      const code = (lastError as { code?: string })?.code ?? ErrorCode.CHILD_FAILED
      const message = `The "${agentId}" agent failed${tried > 1 ? ` after ${tried} attempts` : ''} (${code}): ${describeError(lastError)}`
      if (policy.onFailure === 'give-up') throw new FatalToolError(code, message, { cause: lastError })
      throw new ToolError(code, message, { cause: lastError })
    },
  })
}

/**
 * A supervisor's tool: the model hands over a list of tasks, each runs as a child of one agent
 * (at most `concurrency` at once, and never more than the system's `maxConcurrentChildren`),
 * and it reads every answer in the tasks' order, with each failure kept to its own task.
 */
export function fanOutTool(
  system: AgentSystem<any>,
  agentId: string,
  options: { name?: string; description?: string; concurrency?: number; maxTasks?: number } = {},
): Tool<{ tasks: string[] }> {
  return tool({
    name: options.name ?? `ask_${agentId}_each`.replaceAll('-', '_'),
    description:
      options.description ??
      `Give each task to its own "${agentId}" agent (they work at the same time) and get every answer, in order.`,
    schema: z.object({
      tasks: z
        .array(z.string().min(1))
        .min(1)
        .max(options.maxTasks ?? 50)
        .describe('One task per agent.'),
    }),
    // Run again after a crash, each task finds its child by id (started or not, it is looked for first).
    idempotent: true,
    execute: async ({ tasks }, context) => {
      const results = await fanOut(
        tasks,
        (task, index) =>
          system.run(agentId, task, {
            signal: context.signal,
            parentRunId: context.runId,
            runPath: [...context.runPath, context.runId],
            agentPath: [...(context.agentPath ?? []), context.agentId],
            runId: derivedRunId(context.runId, `${callKey(context)}#${index}`),
            ...(context.rerun ? { reattach: 'first' as const } : {}),
          }),
        { concurrency: options.concurrency ?? tasks.length, signal: context.signal },
      )
      if (context.signal.aborted) throw new AbortedError('The supervisor was cancelled.')
      return results
        .map((r, i) => (r.ok ? `${i + 1}. ${r.value.output}` : `${i + 1}. Error (${r.error.code}): ${r.error.message}`))
        .join('\n')
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
export function handoffTool(
  agentId: string,
  options: { name?: string; description?: string; filter?: HandoffFilter } = {},
): Tool<{ reason?: string }> {
  return tool({
    name: options.name ?? `transfer_to_${agentId}`.replaceAll('-', '_'),
    description:
      options.description ?? `Hand the conversation over to the "${agentId}" agent, who will answer the person from here.`,
    schema: z.object({ reason: z.string().optional().describe('Why, in a few words.') }),
    execute: async ({ reason }) =>
      handoff(agentId, { ...(reason ? { reason } : {}), filter: options.filter ?? handoffFilters.conversation }),
  })
}
