import type { ProviderResponse } from '../provider/provider.ts'
import type { ToolRunOutput } from './actors.ts'
import type { AgentContext, AgentMachineEvent } from './context.ts'
import type { GuardDeps } from './guards.ts'
import { routeCall } from './routing.ts'
import type { AgentRuntime } from './runtime.ts'
import { turnLimit } from './turn-limit.ts'
import { toolOutput } from './waits.ts'

/**
 * Where the run goes when a wait ends, one function per exit: after the model, after a tool,
 * after the turn's calls and its afterTurn hook. The chart's transitions out of each wait ask the
 * exit's function (one guard per answer), so each exit has one rule; the jump into the next turn is
 * one set of transitions (`intoNextTurn`) that all of them share.
 */

/** Where a turn starts: a limit stops it first (`beforeTurn` fails the run), else its first hook or the model. */
export type TurnEntry = 'limit' | 'beforeTurn' | 'beforeProviderCall' | 'model'

/** Into the next turn, at the state `TurnEntry` says. */
export type IntoNextTurn = `next-turn/${TurnEntry}`

/** After the model: its reply's first call at once, or to its hook; the calls step by step; or the turn's end (a final answer). */
export type ModelExit = 'call-runs' | 'call-to-hook' | 'tool-calls' | 'after-turn'

/** After a tool: its afterToolExecution hook, the reply's next call, or (its last call, nothing after it) the next turn. */
export type ToolExit = 'after-tool-hook' | 'next-call' | IntoNextTurn

/** After the reply's calls: the afterTurn hook, the next turn, or the turn's end (a hand-off, or no calls). */
export type CallsExit = 'after-turn-hook' | 'turn-end' | IntoNextTurn

/** After the afterTurn hook: the next turn, or the turn's end. */
export type TurnExit = 'turn-end' | IntoNextTurn

const firstWait = (runtime: AgentRuntime): TurnEntry =>
  runtime.hooks.has('beforeTurn') ? 'beforeTurn' : runtime.hooks.has('beforeProviderCall') ? 'beforeProviderCall' : 'model'

/** Where a turn goes from its `beforeTurn` state (its counter already up): the step-by-step path. */
export function turnEntry(runtime: AgentRuntime, context: AgentContext): TurnEntry {
  return turnLimit(context, runtime, context.turn) ? 'limit' : firstWait(runtime)
}

/** Where the next turn goes if it starts now (its counter not yet up): the direct jump. */
export function nextTurnEntry(runtime: AgentRuntime, context: AgentContext): TurnEntry {
  return turnLimit(context, runtime, context.turn + 1) ? 'limit' : firstWait(runtime)
}

const intoNext = (runtime: AgentRuntime, context: AgentContext): IntoNextTurn => `next-turn/${nextTurnEntry(runtime, context)}`

export function afterModel({ runtime, prepare }: GuardDeps, context: AgentContext, reply: ProviderResponse): ModelExit {
  const call = reply.message.tool_calls?.[0]
  if (call === undefined) return 'after-turn'
  const hook = runtime.hooks.has('beforeToolExecution')
  // As `acceptReply` will record them: the tools this request offered (undefined: all).
  const offered = context.model.outgoing?.tools.map((t) => t.name)
  const route = routeCall({
    handedOver: context.handoff !== undefined,
    steered: context.steering.length > 0 || context.batchSteered,
    invalid: prepare(call, offered).invalid !== undefined,
    hook,
    needsApproval: runtime.tools.get(call.function.name)?.needsApproval,
  })
  return route === 'run' ? 'call-runs' : route === 'hook' ? 'call-to-hook' : 'tool-calls'
}

export function afterTool({ runtime }: GuardDeps, context: AgentContext, output: ToolRunOutput): ToolExit {
  const hooks = runtime.hooks
  if (hooks.has('afterToolExecution')) return 'after-tool-hook'
  const last = context.callIndex + 1 >= context.calls.length
  if (!last || hooks.has('afterTurn') || context.handoff !== undefined || output.handoff !== undefined) return 'next-call'
  return intoNext(runtime, context)
}

/** `undefined` while the reply has calls left. */
export function afterCalls({ runtime }: GuardDeps, context: AgentContext): CallsExit | undefined {
  if (context.callIndex < context.calls.length) return undefined
  if (runtime.hooks.has('afterTurn')) return 'after-turn-hook'
  return afterTurn(runtime, context)
}

export function afterTurn(runtime: AgentRuntime, context: AgentContext): TurnExit {
  return context.calls.length > 0 && context.handoff === undefined ? intoNext(runtime, context) : 'turn-end'
}

/** The `turn` state, by id: the exits that end a turn jump from inside `toolCalls`. */
export const TURN = '#agent.running.turn'

/**
 * The jump into the next turn, the same from every exit that ends a turn (`exit`, the guard that asks
 * that exit's route): to the next turn's first wait (the model, or its first hook) with the turn's
 * end and the next turn's start in one update, or, when a limit stops the next turn, through
 * `beforeTurn`, whose check fails the run. After a tool (`step`), the tool's result joins the
 * transcript in the same update.
 */
export function intoNextTurn<const G extends 'toolAnswered' | 'callsDone' | 'turnDone'>(exit: G, step = false) {
  const next = (announce: boolean) =>
    step
      ? ({
          type: 'finishStep',
          params: ({ event }: { event: AgentMachineEvent }) => ({ output: toolOutput({ event }), announce }),
        } as const)
      : ({ type: 'nextTurn', params: announce } as const)
  const finish = step ? ([{ type: 'finishCall', params: toolOutput }] as const) : ([] as const)
  return [
    { guard: { type: exit, params: 'next-turn/model' }, target: `${TURN}.callingModel`, actions: next(true) },
    // The beforeTurn hooks announce the turn (turn.start) once they let it go on.
    { guard: { type: exit, params: 'next-turn/beforeTurn' }, target: `${TURN}.runningBeforeTurn`, actions: next(false) },
    {
      guard: { type: exit, params: 'next-turn/beforeProviderCall' },
      target: `${TURN}.runningBeforeProviderCall`,
      actions: next(true),
    },
    { guard: { type: exit, params: 'next-turn/limit' }, target: TURN, reenter: true, actions: [...finish, 'emitTurnEnd'] },
  ] as const
}
