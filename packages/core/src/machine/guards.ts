import { decisionMismatch } from '../hitl/decision.ts'
import type { ToolCall } from '../messages.ts'
import type { ProviderResponse } from '../provider/provider.ts'
import type { ToolRunOutput } from './actors.ts'
import type { AgentContext, AgentMachineEvent } from './context.ts'
import type { PreparedCall } from './prepare-call.ts'
import { type CallRoute, routeCall } from './routing.ts'
import type { AgentRuntime } from './runtime.ts'

/** Where a turn that starts now goes first. */
type NextTurnRoute = 'limit' | 'beforeTurn' | 'beforeProviderCall' | 'model'

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
 * Where the next turn goes if it starts now, cached per context (see `nextTurnRoute`). Contexts
 * are per run, so one cache serves every agent.
 */
const nextTurnRoutes = new WeakMap<AgentContext, NextTurnRoute>()

/**
 * The agent machine's named guards. Hook-point guards ask whether an agent has that hook at
 * all (a state with none is passed through); routing guards all ask `routeCall`. Made once for
 * the machine every agent shares: each guard asks `depsOf` for the run's own agent.
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

  /** Where a reply's first call goes, before the reply is accepted (the direct route from the model call). */
  const replyRoute = (context: AgentContext, event: AgentMachineEvent): CallRoute | undefined => {
    const call = (event as unknown as { output: ProviderResponse }).output.message.tool_calls?.[0]
    if (!call) return undefined
    // As `acceptReply` will record them: the tools this request offered (undefined: all).
    const offered = context.model.outgoing?.tools.map((t) => t.name)
    const { prepare, runtime } = depsOf(context)
    return route(
      context,
      call.function.name,
      prepare(call, offered).invalid !== undefined,
      runtime.hooks.has('beforeToolExecution'),
    )
  }

  /**
   * Where the next turn goes if it starts now: a limit stops it (the `beforeTurn` state's checks,
   * for the turn counter one up), or its first wait. Cached per context: the guards of one
   * transition ask it in turn, and a budget check is asked once.
   */
  const nextTurnRoute = (context: AgentContext): NextTurnRoute => {
    let next = nextTurnRoutes.get(context)
    if (next === undefined) {
      const { runtime } = depsOf(context)
      const hooks = runtime.hooks
      next =
        context.turn + 1 > context.run.maxTurns ||
        (context.run.maxTokens !== undefined && context.usage.totalTokens >= context.run.maxTokens) ||
        runtime.budgetChecks.get(context.run.runId)?.() !== undefined
          ? 'limit'
          : hooks.has('beforeTurn')
            ? 'beforeTurn'
            : hooks.has('beforeProviderCall')
              ? 'beforeProviderCall'
              : 'model'
      nextTurnRoutes.set(context, next)
    }
    return next
  }
  /** The turn's calls are done, no hand-off: another turn follows, going where `nextTurnRoute` says. */
  const nextTurnGoesTo = (context: AgentContext, where: NextTurnRoute) =>
    context.calls.length > 0 && !context.handoff && nextTurnRoute(context) === where

  return {
    replyRunsAtOnce: ({ context, event }: GuardArgs) => replyRoute(context, event) === 'run',
    replyGoesToHook: ({ context, event }: GuardArgs) =>
      hooksOf(context).has('beforeToolExecution') && replyRoute(context, event) === 'hook',
    /** The reply's last call ran, no hook or hand-off after it: the next turn's model call at once. */
    stepGoesToModel: ({ context, event }: GuardArgs) =>
      context.callIndex + 1 >= context.calls.length &&
      !hooksOf(context).has('afterToolExecution') &&
      !hooksOf(context).has('afterTurn') &&
      !context.handoff &&
      !(event as unknown as { output: ToolRunOutput }).output.handoff &&
      nextTurnRoute(context) === 'model',
    lastCallToAfterTurnHook: ({ context }: GuardArgs) =>
      hooksOf(context).has('afterTurn') && context.callIndex + 1 >= context.calls.length,
    nextTurnToBeforeTurnHook: ({ context }: GuardArgs) => nextTurnGoesTo(context, 'beforeTurn'),
    nextTurnToBeforeProviderCallHook: ({ context }: GuardArgs) => nextTurnGoesTo(context, 'beforeProviderCall'),
    nextTurnToModel: ({ context }: GuardArgs) => nextTurnGoesTo(context, 'model'),
    hasBeforeTurn: ({ context }: GuardArgs) => hooksOf(context).has('beforeTurn'),
    hasBeforeProviderCall: ({ context }: GuardArgs) => hooksOf(context).has('beforeProviderCall'),
    hasAfterToolExecution: ({ context }: GuardArgs) => hooksOf(context).has('afterToolExecution'),
    hasAfterTurn: ({ context }: GuardArgs) => hooksOf(context).has('afterTurn'),
    turnLimitReached: ({ context }: GuardArgs) => context.turn > context.run.maxTurns,
    tokenBudgetSpent: ({ context }: GuardArgs) =>
      context.run.maxTokens !== undefined && context.usage.totalTokens >= context.run.maxTokens,
    externalBudgetSpent: ({ context }: GuardArgs) =>
      depsOf(context).runtime.budgetChecks.get(context.run.runId)?.() !== undefined,
    handoffRequested: ({ context }: GuardArgs) => context.handoff !== undefined,
    replyHasToolCalls: ({ context }: GuardArgs) => context.calls.length > 0,
    allCallsHandled: ({ context }: GuardArgs) => context.callIndex >= context.calls.length,
    /** The reply's calls are done, no afterTurn hook and no hand-off: straight into the next turn. */
    nextTurnAtOnce: ({ context }: GuardArgs) =>
      context.callIndex >= context.calls.length && !hooksOf(context).has('afterTurn') && !context.handoff,
    callsDoneToAfterTurnHook: ({ context }: GuardArgs) =>
      context.callIndex >= context.calls.length && hooksOf(context).has('afterTurn'),
    /** Fast path: a valid call with no correction pending goes straight to the beforeToolExecution hook. */
    // (Without the hook, the route cannot be 'hook': skip the routing on the hook-less hot path.)
    nextCallGoesToHook: ({ context }: GuardArgs) =>
      hooksOf(context).has('beforeToolExecution') && nextCallRoute(context) === 'hook',
    /** Fast path: a valid call that needs no hook, approval or correction runs at once. */
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

/** The event is a decision that quotes the pending call (request id, call id, digest). */
export function decisionFits(context: AgentContext, event: AgentMachineEvent): boolean {
  return event.type === 'approval.decision' && decisionMismatch(context.current?.approval, event.decision) === undefined
}

/** The event is a decision that quotes the pending call and approves it. */
export function decisionApproves(context: AgentContext, event: AgentMachineEvent): boolean {
  return decisionFits(context, event) && (event as { decision: { approved: boolean } }).decision.approved
}
