import { untilAborted } from '../abort.ts'
import { describeError, ProviderError, TimeoutError } from '../errors.ts'
import { Handoff } from '../handoff.ts'
import { rejectedDecisionAudit } from '../hitl/decision.ts'
import type { ApprovalRequest, AuditEntry, Reviewer } from '../hitl/types.ts'
import type { AssistantMessage, Message, ToolMessage } from '../messages.ts'
import { CALL_ABORT, type CallAbort } from '../provider/call-abort.ts'
import type { ProviderCallOptions, ProviderResponse, ToolSpec } from '../provider/provider.ts'
import { type LedgerToolResult, OUTCOME_UNKNOWN, resumeToolCall } from '../store/ledger.ts'
import type { RunJournal } from '../store/run-journal.ts'
import { type DurableQuestion, stringifyToolOutput, type Tool, type ToolContext, type ToolEmittedEvent } from '../tool.ts'
import type { AgentMachineEvent, CurrentCall, RunInfo } from './context.ts'
import { withLazySignal } from './lazy-signal.ts'
import type { AgentRuntime } from './runtime.ts'
import { failedToolResult, transferredText } from './tool-result-texts.ts'

/**
 * The provider's per-run key (`ProviderCallOptions.run`): one empty object per run, kept with the
 * run's `RunInfo` (the same object in every context of the run, gone with the run).
 */
const runKeys = new WeakMap<RunInfo, object>()
function runKey(run: RunInfo): object {
  let key = runKeys.get(run)
  if (key === undefined) {
    key = {}
    runKeys.set(run, key)
  }
  return key
}

/** A wait's work that settles once: its result becomes `work.done`, its failure `work.error`. */
export interface PromiseWork<I = unknown, O = unknown> {
  kind: 'promise'
  /**
   * `args.signal` is made when first read (most hooks never read it): read it where it is
   * used or handed on, not when the work starts.
   */
  run(args: WorkArgs<I>): Promise<O>
}

/**
 * What promise work is given; `signal` aborts when the work's state is left, and so does what
 * `onAbort` registers (`CallAbort`: told without making a signal).
 */
export interface WorkArgs<I> extends CallAbort {
  readonly input: I
  readonly signal: AbortSignal
  /** The run's agent: its provider, tools, hooks and reviewer. */
  readonly runtime: AgentRuntime
}

/** A wait's work that answers with events of its own; returns what stops it. */
export interface CallbackWork<I = unknown> {
  kind: 'callback'
  /** Returns its stop, told why when something says (a cancel). */
  run(args: { input: I; sendBack: (event: AgentMachineEvent) => void; runtime: AgentRuntime }): (reason?: unknown) => void
}

export type Work = PromiseWork | CallbackWork

// The same shapes as XState's `fromPromise` / `fromCallback`, run by the run's worker instead
// of an actor of their own.
function fromPromise<O, I>(run: PromiseWork<I, O>['run']): PromiseWork<I, O> {
  return { kind: 'promise', run }
}
function fromCallback<_E, I>(run: CallbackWork<I>['run']): CallbackWork<I> {
  return { kind: 'callback', run }
}

/**
 * The work the agent machine does in its waits, one entry per kind (hook, model, reviewer, tool,
 * deadline). The run's worker (`RunWorker`) starts an entry when its wait state is entered and
 * stops it (aborting its `AbortSignal`) when that state is left.
 */
export function createAgentWork() {
  return {
    // The hook works hand on the chain's promise (no `async` wrapper: one promise and one tick less
    // per hook point); the worker turns a synchronous throw into the work's error. Each hook's
    // context has one shape; its signal is made only if a hook reads it (lazy-signal.ts).
    beforeTurnHook: fromPromise((args: WorkArgs<TranscriptInput>) => {
      const { input } = args
      return args.runtime.hooks.beforeTurn(
        withLazySignal(args, {
          agentId: input.run.agentId,
          runId: input.run.runId,
          turn: input.turn,
          messages: [...input.messages],
        }),
      )
    }),

    beforeProviderCallHook: fromPromise((args: WorkArgs<TranscriptInput>) => {
      const { input } = args
      const runtime = args.runtime
      return runtime.hooks.beforeProviderCall(
        withLazySignal(args, {
          agentId: input.run.agentId,
          runId: input.run.runId,
          turn: input.turn,
          messages: [...input.messages],
          tools: [...runtime.toolSpecs],
        }),
      )
    }),

    callModel: fromPromise(async (args: WorkArgs<ModelCallInput>): Promise<ProviderResponse & { durationMs: number }> => {
      const { input, runtime } = args
      // No tools in the input: all of the agent's (a hook changed them otherwise).
      const tools = input.tools ?? runtime.toolSpecs
      const started = runtime.clock.now()
      // The delta callback is made only when someone listens for the deltas.
      const onTextDelta = runtime.events.has('text.delta')
        ? (delta: string) =>
            runtime.events.emit(runEvent(input.run, runtime.clock.now(), { type: 'text.delta', turn: input.turn, delta }))
        : undefined
      // The call's signal is made only if the provider reads it (a provider that spreads these
      // options reads it); signalbox's providers are told of an abort through `CALL_ABORT`
      // instead (call-abort.ts).
      const options: ProviderCallOptions & { [CALL_ABORT]: CallAbort } = withLazySignal(args, {
        run: runKey(input.run),
        [CALL_ABORT]: args,
      })
      if (onTextDelta) options.onTextDelta = onTextDelta
      const response = await runtime.provider.complete(
        runtime.output
          ? { messages: input.messages, tools, responseFormat: runtime.output.responseFormat }
          : { messages: input.messages, tools },
        options,
      )
      return { ...response, durationMs: runtime.clock.now() - started }
    }),

    beforeToolExecutionHook: fromPromise((args: WorkArgs<CallInput>) =>
      args.runtime.hooks.beforeToolExecution(callHookContext(args)),
    ),

    evaluateApprovalRule: fromPromise(async ({ input, runtime }: WorkArgs<{ call: CurrentCall }>) => {
      const rule = runtime.tools.get(input.call.toolName)?.needsApproval
      if (typeof rule !== 'function') return Boolean(rule)
      return Boolean(await rule(input.call.args))
    }),

    /**
     * Shows the request to the reviewer. With a store, only once the wait is durable: a decision
     * can then never answer a request no process would resume. Restored after a crash, it shows
     * the SAME request again (same ids, digest, deadline), unless its deadline has passed while the
     * process was down (the `deadline` actor denies it then). `approval.requested` is announced
     * only once the request can be answered (`Reviewer.open`, when the reviewer has one).
     */
    requestApproval: fromCallback<AgentMachineEvent, { request: ApprovalRequest; run: RunInfo }>(
      ({ input, sendBack, runtime }) => {
        const controller = new AbortController()
        const { request } = input
        const { signal } = controller
        const unavailable = (error: unknown) => {
          if (!signal.aborted) sendBack({ type: 'approval.unavailable', reason: describeError(error) })
        }
        // A decision the reviewer refused (forged, mismatched, late) is recorded here, where every
        // other outcome of the request is: one `approval.rejected` event, one audit entry.
        const rejected = (decision: unknown, reason: string, actor?: string) => {
          const at = runtime.clock.now()
          runtime.events.emit(runEvent(input.run, at, { type: 'approval.rejected', request, decision, reason }))
          runtime.recordAudit(rejectedDecisionAudit({ run: input.run, request, decision, reason, at, actor }))
        }
        const journal = runtime.journals?.get(request.runId)
        // Told to the reviewer: a stored run's request must stay open while no process runs it.
        const options = journal ? { signal, rejected, durable: true } : { signal, rejected }
        const review = (reviewer: Reviewer) => {
          runtime.events.emit(runEvent(input.run, runtime.clock.now(), { type: 'approval.requested', request }))
          reviewer.review(request, options).then((decision) => {
            if (signal.aborted) return
            if (!journal) return sendBack({ type: 'approval.decision', decision })
            // Applied only while this process still owns the stored run (see `confirmLease`).
            journal.confirmLease().then(() => {
              if (!signal.aborted) sendBack({ type: 'approval.decision', decision })
            }, ignoreLost)
          }, unavailable)
        }
        const publish = () => {
          if (signal.aborted || request.deadline <= runtime.clock.now()) return
          const reviewer = runtime.reviewer
          if (!reviewer) {
            sendBack({ type: 'approval.unavailable', reason: 'no reviewer is configured for this agent' })
            return
          }
          if (reviewer.open === undefined) review(reviewer)
          else
            reviewer.open(request, options).then(() => {
              if (!signal.aborted) review(reviewer)
            }, unavailable)
        }
        // A failed save stops the run (the journal reports it); nothing is shown then.
        if (journal) journal.saveWait(request.requestId).then(publish, () => {})
        else publish()
        return (reason) => controller.abort(reason)
      },
    ),

    /**
     * Sends `deadline.reached` at the absolute time `at` (re-armed from it when a stored run is
     * restored). For an approval of a stored run, the reviewer is first asked for a decision stored
     * by the deadline that no process received (it was down): that one is applied instead.
     */
    deadline: fromCallback<AgentMachineEvent, { at: number; approval?: ApprovalRequest }>(({ input, sendBack, runtime }) => {
      const controller = new AbortController()
      const reached = () => {
        const journal = input.approval ? runtime.journals?.get(input.approval.runId) : undefined
        if (journal === undefined || input.approval === undefined) return sendBack({ type: 'deadline.reached' })
        void recoverDecision(runtime, input.approval, controller.signal).then((decision) => {
          if (controller.signal.aborted) return
          // A timeout, like a decision, is applied only by the process that owns the stored run.
          journal.confirmLease().then(() => {
            if (controller.signal.aborted) return
            sendBack(decision ? { type: 'approval.decision', decision } : { type: 'deadline.reached' })
          }, ignoreLost)
        })
      }
      const timer = runtime.clock.setTimeout(reached, Math.max(0, input.at - runtime.clock.now()))
      return () => {
        controller.abort()
        runtime.clock.clearTimeout(timer)
      }
    }),

    executeTool: fromPromise((args: WorkArgs<ToolRunInput>): Promise<ToolRunOutput> => {
      const runtime = args.runtime
      // Routing sends only calls to known tools here (an unknown one is an invalid call).
      const tool = runtime.tools.get(args.input.call.toolName) as Tool<unknown>
      const journal = runtime.journals?.get(args.input.run.runId)
      // Without a journal the tool's run is the work's promise: no async wrapper around it.
      return journal ? runJournaled(runtime, tool, journal, args) : runTool(runtime, tool, args.input, undefined, args, false)
    }),

    afterToolExecutionHook: fromPromise((args: WorkArgs<CallInput & { result: { output: string; isError: boolean } }>) => {
      const { result } = args.input
      return args.runtime.hooks.afterToolExecution(
        Object.assign(callHookContext(args), { output: result.output, isError: result.isError }),
      )
    }),

    afterTurnHook: fromPromise((args: WorkArgs<TranscriptInput & { reply: AssistantMessage; toolResults: ToolMessage[] }>) => {
      const { input } = args
      return args.runtime.hooks.afterTurn(
        withLazySignal(args, {
          agentId: input.run.agentId,
          runId: input.run.runId,
          turn: input.turn,
          reply: input.reply,
          toolResults: [...input.toolResults],
          messages: [...input.messages],
        }),
      )
    }),
  }
}

/** What both tool-call hooks are told: whose run, which turn, and the call. */
function callHookContext(args: WorkArgs<CallInput>) {
  const { input } = args
  return withLazySignal(args, {
    agentId: input.run.agentId,
    runId: input.run.runId,
    turn: input.turn,
    callId: input.call.callId,
    toolName: input.call.toolName,
    input: input.call.args,
  })
}

/** A stored run's tool call: the ledger says whether it runs, and records how it ended. */
async function runJournaled(
  runtime: AgentRuntime,
  tool: Tool<unknown>,
  journal: RunJournal,
  args: WorkArgs<ToolRunInput>,
): Promise<ToolRunOutput> {
  const { input } = args
  const { call, run } = input
  let rerun = false
  // The ledger decides what a call restored after a crash does; a new call just runs. A call
  // cut off while its question waited for a person runs again: it re-attaches to that question.
  // (Such a call is already `started`, durably: it only waits for the same question again.)
  const resumed = journal.pendingQuestion(call.callId)
    ? ({ action: 'reattach' } as const)
    : resumeToolCall(journal.ledgerEntry(call.callId), tool)
  if (resumed.action === 'use_recorded') {
    const { handoff, ...recorded } = resumed.result
    return { output: recorded.output, recorded, ...(handoff ? { handoff } : {}) }
  }
  if (resumed.action === 'report_unknown') {
    reportOutcomeUnknown(runtime, run, call, resumed.result.output)
    journal.finishCall(call.callId, resumed.result)
    return { output: resumed.result.output, recorded: resumed.result }
  }
  if (resumed.action === 'run') {
    // Durable first, then the side effect.
    await journal.startCall({ callId: call.callId, toolName: call.toolName })
    args.signal.throwIfAborted()
    rerun = resumed.reason === 'idempotent_retry'
  }
  try {
    const output = await runTool(runtime, tool, input, journal, args, rerun)
    journal.finishCall(call.callId, {
      output: output.output,
      isError: false,
      outcome: 'executed',
      ...(output.handoff ? { handoff: output.handoff } : {}),
    })
    return output
  } catch (error) {
    if (!args.signal.aborted) journal.finishCall(call.callId, failedToolResult(error, call.toolName))
    throw error
  }
}

/** Runs the tool with its timeout; a hand-off becomes the text the model reads. */
async function runTool(
  runtime: AgentRuntime,
  tool: Tool<unknown>,
  { call, run, turn }: ToolRunInput,
  journal: RunJournal | undefined,
  work: { readonly signal: AbortSignal },
  rerun: boolean,
): Promise<ToolRunOutput> {
  const timeoutMs = tool.timeoutMs
  // Without a timeout the tool is handed the work's own signal, made only if the tool reads it.
  let toolSignal: AbortSignal | undefined
  let timer: unknown
  let timedOut = false
  if (timeoutMs !== undefined) {
    const timeout = new AbortController()
    timer = runtime.clock.setTimeout(() => {
      timedOut = true
      timeout.abort(new TimeoutError(`Tool "${tool.name}" timed out after ${timeoutMs} ms.`, { timeoutMs }))
    }, timeoutMs)
    toolSignal = AbortSignal.any([work.signal, timeout.signal])
  }
  try {
    // One shape, the optional fields set after it; the signal made only if the tool reads it.
    const context: ToolContext = withLazySignal(toolSignal === undefined ? work : { signal: toolSignal }, {
      callId: call.callId,
      agentId: run.agentId,
      runId: run.runId,
      runPath: run.runPath,
      agentPath: run.agentPath ?? [],
      clock: runtime.clock,
      ids: runtime.ids,
      audit: { record: (entry: AuditEntry) => runtime.recordAudit(entry) },
      emit: (event: ToolEmittedEvent) =>
        runtime.events.emit(runEvent(run, runtime.clock.now(), event) as Parameters<typeof runtime.events.emit>[0]),
    })
    if (rerun) context.rerun = true
    if (turn !== undefined) context.turn = turn
    if (journal) context.durableQuestion = durableQuestion(journal, call.callId)
    if (call.approval && call.approved) context.approval = { request: call.approval, decision: call.approved }
    const running = Promise.resolve(tool.execute(call.args, context))
    // A tool that ignores its signal must not hold the run: the timeout wins the race.
    const output = await (timeoutMs === undefined ? running : untilAborted(running, toolSignal as AbortSignal))
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
}

/** A stored run's questions: kept with the run until answered, found again by the resumed call. */
function durableQuestion(journal: RunJournal, callId: string): DurableQuestion {
  return {
    question: journal.pendingQuestion(callId),
    asking: (question) => journal.askQuestion(question),
  }
}

/** How long the deadline waits for `Reviewer.recover` before it denies as a timeout anyway. */
const RECOVER_LIMIT_MS = 10_000

/** The run was lost (the journal stops it and says why): nothing more to do here. */
const ignoreLost = () => {}

/** `Reviewer.recover`, bounded: a reviewer that fails or does not answer in time finds nothing. */
async function recoverDecision(runtime: AgentRuntime, request: ApprovalRequest, signal: AbortSignal) {
  const limit = new AbortController()
  const timer = runtime.clock.setTimeout(() => limit.abort(), RECOVER_LIMIT_MS)
  const both = AbortSignal.any([signal, limit.signal])
  try {
    const found = runtime.reviewer?.recover?.(request, { signal: both })
    return found ? await untilAborted(found, both) : undefined
  } catch {
    return undefined
  } finally {
    runtime.clock.clearTimeout(timer)
  }
}

/**
 * A call cut off by a crash and not run again: the audit says so (the event is its `tool.end`,
 * outcome `outcome_unknown`).
 */
function reportOutcomeUnknown(runtime: AgentRuntime, run: RunInfo, call: CurrentCall, text: string): void {
  const now = runtime.clock.now()
  runtime.recordAudit({
    kind: 'tool.outcome_unknown',
    agentId: run.agentId,
    runId: run.runId,
    runPath: run.runPath,
    callId: call.callId,
    toolName: call.toolName,
    shown: call.args,
    decision: OUTCOME_UNKNOWN,
    reason: text,
    actor: 'system',
    requestedAt: call.startedAt,
    decidedAt: now,
  })
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

export interface ModelCallInput {
  turn: number
  messages: Message[]
  /** Undefined: the agent's own tools (a hook changed them otherwise). */
  tools?: ToolSpec[] | undefined
  run: RunInfo
}

export interface ToolRunInput {
  run: RunInfo
  call: CurrentCall
  /** The turn whose reply made the call (restored with the run, so the same after a resume). */
  turn?: number
}

/** What a tool run produced: the text the model reads, and maybe a hand-off. */
export interface ToolRunOutput {
  output: string
  /** How long the tool ran (set from the worker's measure when the machine takes the output). */
  ranForMs?: number
  /** A result taken from the ledger (a resumed call): what the model reads, as recorded. */
  recorded?: LedgerToolResult
  handoff?: { to: string; reason?: string }
}

/**
 * An event of `run`: the run's fields, `at`, then `body`, made as one object literal of each of
 * the three shapes (a root run; a child, with or without its agent path). Made by spreading an
 * object of the run's fields first, no two events of one type shared a hidden class: a run with a
 * `'*'` listener cost 97 µs a step, 37 with the literals (docs/benchmarks.md).
 */
export function runEvent<B extends object>(run: RunInfo, at: number, body: B) {
  const { agentId, runId, runPath, parentRunId } = run
  if (parentRunId === undefined) return { agentId, runId, runPath, at, ...body }
  // Older snapshots (before agentPath) have none.
  if (run.agentPath && run.agentPath.length > 0)
    return { agentId, runId, runPath, agentPath: run.agentPath, parentRunId, at, ...body }
  return { agentId, runId, runPath, parentRunId, at, ...body }
}

/** A provider failure worth another attempt: rate limits, server errors, dropped connections. */
export function isRetryable(error: unknown): boolean {
  return ProviderError.is(error) && error.retryable
}
