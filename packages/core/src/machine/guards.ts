import { decisionMismatch } from '../hitl/decision.ts'
import type { ToolCall } from '../messages.ts'
import type { AgentContext, AgentMachineEvent } from './context.ts'
import type { PreparedCall } from './prepare-call.ts'
import { type CallRoute, routeCall } from './routing.ts'
import type { AgentRuntime } from './runtime.ts'

interface GuardArgs {
  context: AgentContext
  event: AgentMachineEvent
}

/**
 * The agent machine's named guards. Hook-point guards ask whether an agent has that hook at
 * all (a state with none is passed through); routing guards all ask `routeCall`.
 */
export function createMachineGuards(
  runtime: AgentRuntime,
  prepare: (call: ToolCall, offered?: readonly string[]) => PreparedCall,
) {
  const { hooks, tools } = runtime
  const steered = (context: AgentContext) => context.steering.length > 0 || context.batchSteered
  const route = (context: AgentContext, toolName: string, invalid: boolean, hook: boolean) =>
    routeCall({
      handedOver: context.handoff !== undefined,
      steered: steered(context),
      invalid,
      hook,
      needsApproval: tools.get(toolName)?.needsApproval,
    })

  /** Where the next call of the reply goes, before it is opened (the fast path). */
  const nextCallRoute = (context: AgentContext): CallRoute | undefined => {
    const call = context.calls[context.callIndex]
    return (
      call &&
      route(
        context,
        call.function.name,
        prepare(call, context.model.offered).invalid !== undefined,
        hooks.has('beforeToolExecution'),
      )
    )
  }

  /** Where the open call goes; after its hook ran, the hook no longer stands in the way. */
  const currentRoute = (context: AgentContext, hookDone: boolean): CallRoute | undefined => {
    const call = context.current
    return call && route(context, call.toolName, call.invalid !== undefined, !hookDone && hooks.has('beforeToolExecution'))
  }

  return {
    hasBeforeTurn: () => hooks.has('beforeTurn'),
    hasBeforeProviderCall: () => hooks.has('beforeProviderCall'),
    hasAfterToolExecution: () => hooks.has('afterToolExecution'),
    hasAfterTurn: () => hooks.has('afterTurn'),
    turnLimitReached: ({ context }: GuardArgs) => context.turn > context.run.maxTurns,
    tokenBudgetSpent: ({ context }: GuardArgs) =>
      context.run.maxTokens !== undefined && context.usage.totalTokens >= context.run.maxTokens,
    externalBudgetSpent: ({ context }: GuardArgs) => runtime.budgetChecks.get(context.run.runId)?.() !== undefined,
    handoffRequested: ({ context }: GuardArgs) => context.handoff !== undefined,
    replyHasToolCalls: ({ context }: GuardArgs) => context.calls.length > 0,
    allCallsHandled: ({ context }: GuardArgs) => context.callIndex >= context.calls.length,
    /** The reply's calls are done, no afterTurn hook and no hand-off: straight into the next turn. */
    nextTurnAtOnce: ({ context }: GuardArgs) =>
      context.callIndex >= context.calls.length && !hooks.has('afterTurn') && !context.handoff,
    callsDoneToAfterTurnHook: ({ context }: GuardArgs) => context.callIndex >= context.calls.length && hooks.has('afterTurn'),
    /** Fast path: a valid call with no correction pending goes straight to the beforeToolExecution hook. */
    // (Without the hook, the route cannot be 'hook': skip the routing on the hook-less hot path.)
    nextCallGoesToHook: ({ context }: GuardArgs) => hooks.has('beforeToolExecution') && nextCallRoute(context) === 'hook',
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
