import { fromCallback, fromPromise } from 'xstate'
import { untilAborted } from '../abort.ts'
import { describeError, ProviderError, TimeoutError } from '../errors.ts'
import type { AgentEvent } from '../events.ts'
import { Handoff } from '../handoff.ts'
import type { ApprovalRequest } from '../hitl/types.ts'
import type { AssistantMessage, Message, ToolMessage } from '../messages.ts'
import type { ProviderResponse, ToolSpec } from '../provider/provider.ts'
import { stringifyToolOutput, type Tool, type ToolEmittedEvent } from '../tool.ts'
import type { AgentMachineEvent, CurrentCall, RunInfo } from './context.ts'
import type { AgentRuntime } from './runtime.ts'
import { transferredText } from './tool-result-texts.ts'

/**
 * The named actors the agent machine invokes, one per wait. Each is registered by name in
 * `setup({ actors })` (inline actors cannot be persisted) and receives the `AbortSignal`
 * that aborts when its state is left.
 */
export function createAgentActors(runtime: AgentRuntime) {
  const hookBase = (input: TurnInput, signal: AbortSignal) => ({
    agentId: input.run.agentId,
    runId: input.run.runId,
    turn: input.turn,
    signal,
  })

  return {
    beforeTurnHook: fromPromise(async ({ input, signal }: { input: TranscriptInput; signal: AbortSignal }) =>
      runtime.hooks.beforeTurn({ ...hookBase(input, signal), messages: [...input.messages] }),
    ),

    beforeProviderCallHook: fromPromise(async ({ input, signal }: { input: TranscriptInput; signal: AbortSignal }) =>
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
          runtime.output
            ? { messages: input.messages, tools: input.tools, responseFormat: runtime.output.responseFormat }
            : { messages: input.messages, tools: input.tools },
          onTextDelta ? { signal, onTextDelta } : { signal },
        )
        return { ...response, durationMs: runtime.clock.now() - started }
      },
    ),

    beforeToolExecutionHook: fromPromise(async ({ input, signal }: { input: CallInput; signal: AbortSignal }) =>
      runtime.hooks.beforeToolExecution({
        ...hookBase(input, signal),
        callId: input.call.callId,
        toolName: input.call.toolName,
        input: input.call.args,
      }),
    ),

    evaluateApprovalRule: fromPromise(async ({ input }: { input: { call: CurrentCall } }) => {
      const rule = runtime.tools.get(input.call.toolName)?.needsApproval
      if (typeof rule !== 'function') return Boolean(rule)
      return Boolean(await rule(input.call.args))
    }),

    requestApproval: fromCallback<AgentMachineEvent, { run: RunInfo; request: ApprovalRequest }>(({ input, sendBack }) => {
      const controller = new AbortController()
      const reviewer = runtime.reviewer
      if (!reviewer) {
        sendBack({ type: 'approval.unavailable', reason: 'no reviewer is configured for this agent' })
        return () => {}
      }
      const { signal } = controller
      const unavailable = (error: unknown) => {
        if (!signal.aborted) sendBack({ type: 'approval.unavailable', reason: describeError(error) })
      }
      const review = () => {
        // Announced before anyone can decide, and only once the request can be answered (`Reviewer.open`).
        const announced: AgentEvent = {
          ...eventFields(input.run),
          at: runtime.clock.now(),
          type: 'approval.requested',
          request: input.request,
        }
        runtime.events.emit(announced)
        reviewer.review(input.request, { signal }).then((decision) => {
          if (!signal.aborted) sendBack({ type: 'approval.decision', decision })
        }, unavailable)
      }
      if (reviewer.open === undefined) review()
      else
        reviewer.open(input.request, { signal }).then(() => {
          if (!signal.aborted) review()
        }, unavailable)
      return () => controller.abort()
    }),

    executeTool: fromPromise(async ({ input, signal }: { input: ToolRunInput; signal: AbortSignal }): Promise<ToolRunOutput> => {
      const { call, run } = input
      // Routing sends only calls to known tools here (an unknown one is an invalid call).
      const tool = runtime.tools.get(call.toolName) as Tool<unknown>
      const base = eventFields(run)
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
            agentId: run.agentId,
            runId: run.runId,
            runPath: run.runPath,
            agentPath: run.agentPath ?? [],
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
          if (output.filter) runtime.handoffFilters.set(run.runId, output.filter)
          return {
            output: transferredText(output.to),
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

    afterToolExecutionHook: fromPromise(
      async ({ input, signal }: { input: CallInput & { result: { output: string; isError: boolean } }; signal: AbortSignal }) =>
        runtime.hooks.afterToolExecution({
          ...hookBase(input, signal),
          callId: input.call.callId,
          toolName: input.call.toolName,
          input: input.call.args,
          output: input.result.output,
          isError: input.result.isError,
        }),
    ),

    afterTurnHook: fromPromise(
      async ({
        input,
        signal,
      }: {
        input: TranscriptInput & { reply: AssistantMessage; toolResults: ToolMessage[] }
        signal: AbortSignal
      }) => {
        await runtime.hooks.afterTurn({
          ...hookBase(input, signal),
          reply: input.reply,
          toolResults: [...input.toolResults],
          messages: [...input.messages],
        })
      },
    ),
  }
}

/** What every hook is told: whose run, which turn. */
export interface TurnInput {
  run: RunInfo
  turn: number
}

export interface TranscriptInput extends TurnInput {
  messages: Message[]
}

export interface CallInput extends TurnInput {
  call: CurrentCall
}

export interface ToolRunInput {
  run: RunInfo
  call: CurrentCall
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

export function eventFields(run: RunInfo): EventFields {
  if (run.parentRunId === undefined) return { agentId: run.agentId, runId: run.runId, runPath: run.runPath }
  return {
    agentId: run.agentId,
    runId: run.runId,
    runPath: run.runPath,
    // Older snapshots (before agentPath) have none.
    ...(run.agentPath && run.agentPath.length > 0 ? { agentPath: run.agentPath } : {}),
    parentRunId: run.parentRunId,
  }
}

/** A provider failure worth another attempt: rate limits, server errors, dropped connections. */
export function isRetryable(error: unknown): boolean {
  return error instanceof ProviderError && error.retryable
}
