import { deepFreeze } from '../events.ts'
import { emptyUsage, type Message } from '../messages.ts'
import { finishedStatus } from '../run-status.ts'
import type { AgentContext, AgentInput, AgentOutput } from './context.ts'

/** A run's first context: the transcript so far (frozen: events and hooks share it) and nothing done. */
export function createContext(input: AgentInput): AgentContext {
  const messages: Message[] = []
  if (input.instructions) messages.push({ role: 'system', content: input.instructions })
  if (typeof input.input === 'string') messages.push({ role: 'user', content: input.input })
  else messages.push(...input.input.map((m) => deepFreeze(structuredClone(m))))
  for (const m of messages) Object.freeze(m)
  const lastUser = [...messages].reverse().find((m) => m.role === 'user')
  return {
    run: {
      agentId: input.agentId,
      runId: input.runId,
      runPath: input.runPath ?? [],
      agentPath: input.agentPath ?? [],
      parentRunId: input.parentRunId,
      input: typeof input.input === 'string' ? input.input : ((lastUser?.content as string | undefined) ?? ''),
      maxTurns: input.maxTurns,
      maxTokens: input.maxTokens,
      ...(input.treeLimits ? { treeLimits: { ...input.treeLimits } } : {}),
      startedAt: input.startedAt,
    },
    handoff: undefined,
    messages,
    turn: 0,
    usage: emptyUsage(),
    model: { outgoing: undefined, attempt: 1, retryDelayMs: 0, retryAt: 0, lastError: undefined, finishReason: undefined },
    reply: undefined,
    calls: [],
    callIndex: 0,
    current: undefined,
    toolResults: [],
    steering: input.steering ?? [],
    batchSteered: false,
    status: 'idle',
    output: undefined,
    error: undefined,
    stopReason: undefined,
  }
}

/** What a finished run hands back. */
export function runOutput(context: AgentContext): AgentOutput {
  return {
    status: finishedStatus(context.status),
    output: context.output,
    error: context.error,
    stopReason: context.stopReason,
    turns: context.turn,
    usage: context.usage,
    messages: context.messages,
    pendingSteering: context.steering,
    handoff: context.handoff,
  }
}
