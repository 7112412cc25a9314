import { ErrorCode, FatalToolError, SignalboxError } from '../errors.ts'
import { decisionMismatch } from '../hitl/decision.ts'
import { editedArgumentsRejected } from '../hitl/edited-arguments.ts'
import type { ApprovalDecision } from '../hitl/types.ts'
import type { ToolCall } from '../messages.ts'
import { isRetryable } from './actors.ts'
import type { AgentContext, AgentMachineEvent } from './context.ts'
import type { PreparedCall } from './prepare-call.ts'
import {
  afterCalls,
  afterModel,
  afterTool,
  afterTurn,
  type CallsExit,
  type ModelExit,
  type ToolExit,
  type TurnEntry,
  type TurnExit,
  turnEntry,
} from './routes.ts'
import { type CallRoute, routeCall } from './routing.ts'
import type { AgentRuntime } from './runtime.ts'
import { outputOf } from './waits.ts'

interface GuardArgs {
  context: AgentContext
  event: AgentMachineEvent
}

/** What the guards need of a run's agent. */
export interface GuardDeps {
  runtime: AgentRuntime
  prepare: (call: ToolCall, offered?: readonly string[]) => PreparedCall
}

/** The guards of one agent's runs (e.g. to test the routing). */
export function createMachineGuards(runtime: AgentRuntime, prepare: GuardDeps['prepare']) {
  const deps = { runtime, prepare }
  return machineGuards(() => deps)
}

/**
 * The agent machine's named guards. Hook-point guards ask whether an agent has that hook at
 * all (a state with none is passed through); the exits of the waits ask their route (routes.ts),
 * one guard per exit with the answer as its parameter; the routing of a call asks `routeCall`.
 * Made once for the machine every agent shares: each guard asks `depsOf` for the run's own agent.
 */
export function machineGuards(depsOf: (context: AgentContext) => GuardDeps) {
  const hooksOf = (context: AgentContext) => depsOf(context).runtime.hooks
  const steered = (context: AgentContext) => context.steering.length > 0 || context.batchSteered
  const route = (context: AgentContext, toolName: string, invalid: boolean, hook: boolean) =>
    routeCall({
      handedOver: context.handoff !== undefined,
      steered: steered(context),
      invalid,
      hook,
      needsApproval: depsOf(context).runtime.tools.get(toolName)?.needsApproval,
    })

  /** Where the next call of the reply goes, before it is opened (the fast path). */
  const nextCallRoute = (context: AgentContext): CallRoute | undefined => {
    const call = context.calls[context.callIndex]
    return (
      call &&
      route(
        context,
        call.function.name,
        depsOf(context).prepare(call, context.model.offered).invalid !== undefined,
        hooksOf(context).has('beforeToolExecution'),
      )
    )
  }

  /** Where the open call goes; after its hook ran, the hook no longer stands in the way. */
  const currentRoute = (context: AgentContext, hookDone: boolean): CallRoute | undefined => {
    const call = context.current
    return (
      call && route(context, call.toolName, call.invalid !== undefined, !hookDone && hooksOf(context).has('beforeToolExecution'))
    )
  }

  return {
    // The exits of the waits, and where a turn starts (routes.ts).
    /** A turn starts where `turnEntry` says (the `beforeTurn` state asks it for a limit). */
    turnStarts: ({ context }: GuardArgs, entry: TurnEntry) => turnEntry(depsOf(context).runtime, context) === entry,
    modelAnswered: ({ context, event }: GuardArgs, exit: ModelExit) =>
      afterModel(depsOf(context), context, outputOf('callingModel', event)) === exit,
    toolAnswered: ({ context, event }: GuardArgs, exit: ToolExit) =>
      afterTool(depsOf(context), context, outputOf('executingTool', event)) === exit,
    callsDone: ({ context }: GuardArgs, exit: CallsExit) => afterCalls(depsOf(context), context) === exit,
    turnDone: ({ context }: GuardArgs, exit: TurnExit) => afterTurn(depsOf(context).runtime, context) === exit,

    // What a wait's work answered.
    hookStopsRun: ({ event }: GuardArgs) => outputOf('runningBeforeTurn', event)?.stop === true,
    hookDecidedCall: ({ event }: GuardArgs) => outputOf('runningBeforeToolExecution', event).action !== 'allow',
    ruleAsksPerson: ({ event }: GuardArgs) => outputOf('evaluatingApprovalRule', event),
    modelRetryable: ({ context, event }: GuardArgs) =>
      event.type === 'work.error' &&
      isRetryable(event.error) &&
      context.model.attempt < depsOf(context).runtime.retry.maxAttempts,
    toolFailedFatally: ({ event }: GuardArgs) => event.type === 'work.error' && FatalToolError.is(event.error),
    /** A decision that quotes the pending call and approves it (with edited arguments its tool accepts). */
    decisionApproves: ({ context, event }: GuardArgs) => {
      const decision = fittingDecision(context, event)
      return (
        decision?.approved === true &&
        !editedArgumentsRejected(depsOf(context).runtime.tools.get(context.current?.toolName ?? ''), decision)
      )
    },
    /** A decision that quotes the pending call (request id, call id, digest). */
    decisionFits: ({ context, event }: GuardArgs) => fittingDecision(context, event) !== undefined,

    // Hook points: an agent without the hook passes the state.
    hasBeforeTurn: ({ context }: GuardArgs) => hooksOf(context).has('beforeTurn'),
    hasBeforeProviderCall: ({ context }: GuardArgs) => hooksOf(context).has('beforeProviderCall'),
    hasAfterToolExecution: ({ context }: GuardArgs) => hooksOf(context).has('afterToolExecution'),
    hasAfterTurn: ({ context }: GuardArgs) => hooksOf(context).has('afterTurn'),
    lastCallToAfterTurnHook: ({ context }: GuardArgs) =>
      hooksOf(context).has('afterTurn') && context.callIndex + 1 >= context.calls.length,
    handoffRequested: ({ context }: GuardArgs) => context.handoff !== undefined,
    replyHasToolCalls: ({ context }: GuardArgs) => context.calls.length > 0,

    // The routing of a call (routing.ts). The fast path: where the next call goes before it is opened.
    /** A valid call with no correction pending goes straight to the beforeToolExecution hook. */
    // (Without the hook, the route cannot be 'hook': skip the routing on the hook-less hot path.)
    nextCallGoesToHook: ({ context }: GuardArgs) =>
      hooksOf(context).has('beforeToolExecution') && nextCallRoute(context) === 'hook',
    /** A valid call that needs no hook, approval or correction runs at once. */
    nextCallRunsAtOnce: ({ context }: GuardArgs) => nextCallRoute(context) === 'run',
    // The step-by-step path: each state checks one branch of the same routing.
    callHandedOver: ({ context }: GuardArgs) => currentRoute(context, false) === 'handed-over',
    callSteered: ({ context }: GuardArgs) => currentRoute(context, false) === 'steered',
    callIsInvalid: ({ context }: GuardArgs) => currentRoute(context, false) === 'invalid',
    callGoesToHook: ({ context }: GuardArgs) => currentRoute(context, false) === 'hook',
    callRunsAtOnce: ({ context }: GuardArgs) => currentRoute(context, true) === 'run',
    approvalAlways: ({ context }: GuardArgs) => currentRoute(context, true) === 'approval',
    approvalByRule: ({ context }: GuardArgs) => currentRoute(context, true) === 'approval-rule',
  }
}

/** The decision an `approval.decision` event carries, when it quotes the pending call (checked, so typed). */
export function fittingDecision(context: AgentContext, event: AgentMachineEvent): ApprovalDecision | undefined {
  if (event.type !== 'approval.decision') return undefined
  const decision = event.decision
  return fitsPending(context, decision) ? decision : undefined
}

/** The decision a transition guarded by `decisionFits` (or `decisionApproves`) applies. */
export function decision({ context, event }: { context: AgentContext; event: AgentMachineEvent }): ApprovalDecision {
  const fits = fittingDecision(context, event)
  if (fits === undefined)
    throw new SignalboxError(ErrorCode.INTERNAL_ERROR, 'a decision applied without fitting the pending call')
  return fits
}

function fitsPending(context: AgentContext, decision: unknown): decision is ApprovalDecision {
  return decisionMismatch(context.current?.approval, decision) === undefined
}
