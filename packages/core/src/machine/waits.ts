import { ErrorCode, SignalboxError } from '../errors.ts'
import type { ApprovalRequest } from '../hitl/types.ts'
import type { BeforeTurnResult, ToolGate } from '../hooks.ts'
import type { AssistantMessage, Message } from '../messages.ts'
import type { ProviderResponse, ToolSpec } from '../provider/provider.ts'
import { createAgentWork, type ToolRunOutput, type Work } from './actors.ts'
import type { AgentContext, AgentMachineEvent, CurrentCall } from './context.ts'
import type { RunWorker } from './worker.ts'

/** Set only in states entered with a call open, a reply received. */
const current = (context: AgentContext) => context.current as CurrentCall
const reply = (context: AgentContext) => context.reply as AssistantMessage

const agentWork = createAgentWork()
type WorkName = keyof typeof agentWork

/**
 * The work of each wait state, with its input (made from the context when the state is entered,
 * and again when a stored run is restored in that state: same request id, same absolute deadline).
 */
const waits = {
  runningBeforeTurn: [
    { src: 'beforeTurnHook', input: (context) => ({ run: context.run, turn: context.turn, messages: context.messages }) },
  ],
  runningBeforeProviderCall: [
    {
      src: 'beforeProviderCallHook',
      input: (context) => ({ run: context.run, turn: context.turn, messages: context.messages }),
    },
  ],
  callingModel: [
    {
      src: 'callModel',
      input: (context) => ({
        turn: context.turn,
        messages: context.model.outgoing?.messages ?? context.messages,
        // Undefined: the agent's own tools (the work looks them up; inputs stay data).
        tools: context.model.outgoing?.tools,
        run: context.run,
      }),
    },
  ],
  // An absolute time, not `after`: a restored run re-arms it.
  waitingToRetry: [{ src: 'deadline', input: (context) => ({ at: context.model.retryAt }) }],
  runningBeforeToolExecution: [
    {
      src: 'beforeToolExecutionHook',
      input: (context) => ({ run: context.run, turn: context.turn, call: current(context) }),
    },
  ],
  evaluatingApprovalRule: [{ src: 'evaluateApprovalRule', input: (context) => ({ call: current(context) }) }],
  awaitingApproval: [
    {
      src: 'requestApproval',
      input: (context) => ({ request: current(context).approval as ApprovalRequest, run: context.run }),
    },
    // Absolute, so a restored run re-arms it (or it fires at once); with the request, so a decision
    // stored by the deadline while no process ran the run is recovered (`Reviewer.recover`).
    {
      src: 'deadline',
      input: (context) => {
        const approval = current(context).approval as ApprovalRequest
        return { at: approval.deadline, approval }
      },
    },
  ],
  executingTool: [{ src: 'executeTool', input: (context) => ({ run: context.run, call: current(context), turn: context.turn }) }],
  runningAfterToolExecution: [
    {
      src: 'afterToolExecutionHook',
      input: (context) => {
        const call = current(context)
        return { run: context.run, turn: context.turn, call, result: call.result ?? { output: '', isError: false } }
      },
    },
  ],
  runningAfterTurn: [
    {
      src: 'afterTurnHook',
      input: (context) => ({
        run: context.run,
        turn: context.turn,
        reply: reply(context),
        toolResults: context.toolResults,
        messages: context.messages,
      }),
    },
  ],
} satisfies Record<string, { src: WorkName; input: (context: AgentContext) => unknown }[]>
export type WaitName = keyof typeof waits

/**
 * What the work of each wait state answers with: the `output` of the `work.done` event that state
 * receives. The waits whose work answers with events of its own (`approval.decision`,
 * `deadline.reached`...) have none.
 */
export interface WaitOutputs {
  runningBeforeTurn: BeforeTurnResult
  runningBeforeProviderCall: { messages: Message[]; tools: ToolSpec[] }
  callingModel: ProviderResponse & { durationMs: number }
  runningBeforeToolExecution: ToolGate
  evaluatingApprovalRule: boolean
  executingTool: ToolRunOutput
  runningAfterToolExecution: { output: string; isError: boolean }
  runningAfterTurn: void
}

/** Each answering wait's work produces its state's output type (checked here, at compile time). */
type WorkOutput<W extends keyof WaitOutputs> = (typeof waits)[W][0]['src'] extends infer S extends WorkName
  ? (typeof agentWork)[S] extends { run(args: never): Promise<infer O> }
    ? O
    : never
  : never
const _outputsMatch: { [W in keyof WaitOutputs]: [WorkOutput<W>] extends [WaitOutputs[W]] ? true : false } = {
  runningBeforeTurn: true,
  runningBeforeProviderCall: true,
  callingModel: true,
  runningBeforeToolExecution: true,
  evaluatingApprovalRule: true,
  executingTool: true,
  runningAfterToolExecution: true,
  runningAfterTurn: true,
}
void _outputsMatch

/** The answer of wait state `W`'s own work: the worker names the state it started the work for. */
type DoneIn<W extends keyof WaitOutputs> = { type: 'work.done'; wait: W; output: WaitOutputs[W] }

/**
 * Whether `event` answers `wait`'s work. Checked at run time by the name the worker put on the
 * answer; the output's type follows from `_outputsMatch` (each wait's work produces its type).
 */
function answersWait<W extends keyof WaitOutputs>(event: { type: string; wait?: string }, wait: W): event is DoneIn<W> {
  return event.type === 'work.done' && event.wait === wait
}

/**
 * The output of `work.done` in wait state `wait`, typed for that state. The worker drops the
 * answer of work whose state was left, so any other event here is a bug in the chart.
 */
export function outputOf<W extends keyof WaitOutputs>(wait: W, event: AgentMachineEvent): WaitOutputs[W] {
  if (!answersWait(event, wait)) {
    const got = event.type === 'work.done' ? `the answer of ${event.wait}` : event.type
    throw new SignalboxError(ErrorCode.INTERNAL_ERROR, `${wait}: expected its work's answer, got ${got}`)
  }
  return event.output
}

/** Starts the work of wait state `wait` on the run's worker. */
export function startWait(worker: RunWorker, wait: WaitName, context: AgentContext): void {
  const specs: readonly { src: WorkName; input: (context: AgentContext) => unknown }[] = waits[wait]
  for (let i = 0; i < specs.length; i++) {
    const spec = specs[i] as (typeof specs)[number]
    worker.start(agentWork[spec.src] as Work, spec.input(context), wait)
  }
}

/**
 * A restored run's worker restarts the work of the state the run was saved in, with the same
 * inputs (they are made from the restored context): the model is called again, the approval shown
 * again with its request id, the deadline re-armed from its absolute time.
 */
export function resumeWait(worker: RunWorker, snapshot: { status: string; value: unknown; context: AgentContext }): void {
  if (snapshot.status !== 'active') return
  // The wait states are leaves named as in `waits`: follow the state value down to its leaf.
  let value = snapshot.value
  while (value !== null && typeof value === 'object') value = Object.values(value)[0]
  if (typeof value === 'string' && Object.hasOwn(waits, value)) startWait(worker, value as WaitName, snapshot.context)
}

// What a wait's answer hands the actions of its transitions, typed by the state it answers.
export const modelReply = ({ event }: { event: AgentMachineEvent }) => outputOf('callingModel', event)
/** The tool's output, with how long it ran (the worker's measure of the `executingTool` work). */
export const toolOutput = ({ event }: { event: AgentMachineEvent }): ToolRunOutput => {
  const output = outputOf('executingTool', event)
  // The work's own fresh object (made by `executeTool`): completed here rather than copied.
  output.ranForMs = event.type === 'work.done' ? event.elapsedMs : 0
  return output
}
export const rewrite = ({ event }: { event: AgentMachineEvent }) => outputOf('runningAfterToolExecution', event)
/** A wait's work failed (`work.error`): what it threw. */
export const failure = ({ event }: { event: AgentMachineEvent }) => ({
  error: event.type === 'work.error' ? event.error : undefined,
  elapsedMs: event.type === 'work.error' ? event.elapsedMs : 0,
})
