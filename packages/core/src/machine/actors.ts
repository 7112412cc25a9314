import { fromCallback, fromPromise } from 'xstate'
import { untilAborted } from '../abort.ts'
import { describeError, ProviderError, TimeoutError } from '../errors.ts'
import { Handoff } from '../handoff.ts'
import type { ApprovalRequest } from '../hitl/types.ts'
import type { Message } from '../messages.ts'
import type { ProviderResponse, ToolSpec } from '../provider/provider.ts'
import { stringifyToolOutput, type ToolEmittedEvent } from '../tool.ts'
import type { AgentContext, AgentMachineEvent } from './context.ts'
import type { AgentRuntime } from './runtime.ts'

/**
 * The named actors the agent machine invokes, one per wait. Each is registered by name in
 * `setup({ actors })` (inline actors cannot be persisted) and receives the `AbortSignal`
 * that aborts when its state is left.
 */
export function createAgentActors(runtime: AgentRuntime) {
  const hookBase = (context: AgentContext, signal: AbortSignal) => ({
    agentId: context.run.agentId,
    runId: context.run.runId,
    turn: context.turn,
    signal,
  })

  return {
    beforeTurnHook: fromPromise(async ({ input, signal }: { input: AgentContext; signal: AbortSignal }) =>
      runtime.hooks.beforeTurn({ ...hookBase(input, signal), messages: [...input.messages] }),
    ),

    beforeProviderCallHook: fromPromise(async ({ input, signal }: { input: AgentContext; signal: AbortSignal }) =>
      runtime.hooks.beforeProviderCall({
        ...hookBase(input, signal),
        messages: [...input.messages],
        tools: [...runtime.toolSpecs],
      }),
    ),

    callModel: fromPromise(
      async ({
        input,
        signal,
      }: {
        input: { turn: number; messages: Message[]; tools: ToolSpec[]; base: EventFields }
        signal: AbortSignal
      }): Promise<ProviderResponse & { durationMs: number }> => {
        const started = runtime.clock.now()
        const onTextDelta = runtime.events.has('text.delta')
          ? (delta: string) =>
              runtime.events.emit({ ...input.base, at: runtime.clock.now(), type: 'text.delta', turn: input.turn, delta })
          : undefined
        const response = await runtime.provider.complete(
          { messages: input.messages, tools: input.tools },
          onTextDelta ? { signal, onTextDelta } : { signal },
        )
        return { ...response, durationMs: runtime.clock.now() - started }
      },
    ),

    beforeToolExecutionHook: fromPromise(async ({ input, signal }: { input: AgentContext; signal: AbortSignal }) => {
      const call = input.current
      if (!call) throw new Error('no current call')
      return runtime.hooks.beforeToolExecution({
        ...hookBase(input, signal),
        callId: call.callId,
        toolName: call.toolName,
        input: call.args,
      })
    }),

    evaluateApprovalRule: fromPromise(async ({ input }: { input: AgentContext }) => {
      const call = input.current
      const rule = call ? runtime.tools.get(call.toolName)?.needsApproval : undefined
      if (typeof rule !== 'function') return Boolean(rule)
      return Boolean(await rule(call?.args))
    }),

    requestApproval: fromCallback<AgentMachineEvent, { request: ApprovalRequest }>(({ input, sendBack }) => {
      const controller = new AbortController()
      const reviewer = runtime.reviewer
      if (!reviewer) {
        sendBack({ type: 'approval.unavailable', reason: 'no reviewer is configured for this agent' })
        return () => {}
      }
      reviewer.review(input.request, { signal: controller.signal }).then(
        (decision) => {
          if (!controller.signal.aborted) sendBack({ type: 'approval.decision', decision })
        },
        (error) => {
          if (!controller.signal.aborted) sendBack({ type: 'approval.unavailable', reason: describeError(error) })
        },
      )
      return () => controller.abort()
    }),

    executeTool: fromPromise(async ({ input, signal }: { input: AgentContext; signal: AbortSignal }): Promise<ToolRunOutput> => {
      const call = input.current
      const tool = call ? runtime.tools.get(call.toolName) : undefined
      if (!call || !tool) throw new Error('no tool to execute')
      const base = eventFields(input)
      const timeoutMs = tool.timeoutMs
      let toolSignal = signal
      let timer: unknown
      let timedOut = false
      if (timeoutMs !== undefined) {
        const timeout = new AbortController()
        timer = runtime.clock.setTimeout(() => {
          timedOut = true
          timeout.abort(new TimeoutError(`Tool "${tool.name}" timed out after ${timeoutMs} ms.`, { timeoutMs }))
        }, timeoutMs)
        toolSignal = AbortSignal.any([signal, timeout.signal])
      }
      try {
        const work = Promise.resolve(
          tool.execute(call.args, {
            signal: toolSignal,
            callId: call.callId,
            agentId: input.run.agentId,
            runId: input.run.runId,
            runPath: input.run.runPath,
            agentPath: input.run.agentPath ?? [],
            clock: runtime.clock,
            ids: runtime.ids,
            audit: { record: (entry) => runtime.recordAudit(entry) },
            emit: (event: ToolEmittedEvent) =>
              runtime.events.emit({ ...base, at: runtime.clock.now(), ...event } as Parameters<typeof runtime.events.emit>[0]),
          }),
        )
        // A tool that ignores its signal must not hold the run: the timeout wins the race.
        const output = await (timeoutMs === undefined ? work : untilAborted(work, toolSignal))
        if (output instanceof Handoff) {
          if (output.filter) runtime.handoffFilters.set(input.run.runId, output.filter)
          return {
            output: `Transferred the conversation to "${output.to}".`,
            handoff: { to: output.to, ...(output.reason ? { reason: output.reason } : {}) },
          }
        }
        return { output: stringifyToolOutput(output) }
      } catch (error) {
        if (timedOut) throw new TimeoutError(`Tool "${tool.name}" timed out after ${timeoutMs} ms.`, { timeoutMs })
        throw error
      } finally {
        if (timer !== undefined) runtime.clock.clearTimeout(timer)
      }
    }),

    afterToolExecutionHook: fromPromise(async ({ input, signal }: { input: AgentContext; signal: AbortSignal }) => {
      const call = input.current
      if (!call?.result) throw new Error('no tool result')
      return runtime.hooks.afterToolExecution({
        ...hookBase(input, signal),
        callId: call.callId,
        toolName: call.toolName,
        input: call.args,
        output: call.result.output,
        isError: call.result.isError,
      })
    }),

    afterTurnHook: fromPromise(async ({ input, signal }: { input: AgentContext; signal: AbortSignal }) => {
      const reply = input.reply
      if (!reply) throw new Error('no reply')
      await runtime.hooks.afterTurn({
        ...hookBase(input, signal),
        reply,
        toolResults: [...input.toolResults],
        messages: [...input.messages],
      })
    }),
  }
}

/** What a tool run produced: the text the model reads, and maybe a hand-off. */
export interface ToolRunOutput {
  output: string
  handoff?: { to: string; reason?: string }
}

export interface EventFields {
  agentId: string
  runId: string
  runPath: string[]
  agentPath?: string[]
  parentRunId?: string
}

export function eventFields(context: AgentContext): EventFields {
  if (context.run.parentRunId === undefined)
    return { agentId: context.run.agentId, runId: context.run.runId, runPath: context.run.runPath }
  return {
    agentId: context.run.agentId,
    runId: context.run.runId,
    runPath: context.run.runPath,
    // Older snapshots (before agentPath) have none.
    ...(context.run.agentPath && context.run.agentPath.length > 0 ? { agentPath: context.run.agentPath } : {}),
    parentRunId: context.run.parentRunId,
  }
}

/** A provider failure worth another attempt: rate limits, server errors, dropped connections. */
export function isRetryable(error: unknown): boolean {
  return error instanceof ProviderError && error.retryable
}
