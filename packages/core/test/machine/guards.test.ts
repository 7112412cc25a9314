import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { HookChain } from '../../src/hooks.ts'
import type { AgentContext, AgentMachineEvent } from '../../src/machine/context.ts'
import { createContext } from '../../src/machine/create-context.ts'
import { createMachineGuards } from '../../src/machine/guards.ts'
import { createCallPreparer, openCall } from '../../src/machine/prepare-call.ts'
import type { CallRoute } from '../../src/machine/routing.ts'
import type { AgentRuntime } from '../../src/machine/runtime.ts'
import { type Tool, tool } from '../../src/tool.ts'

const echo = (needsApproval?: boolean | ((args: { x: number }) => boolean)) =>
  tool({
    name: 'echo',
    description: 'Echo.',
    schema: z.object({ x: z.number() }),
    ...(needsApproval === undefined ? {} : { needsApproval }),
    execute: (args) => String(args.x),
  }) as Tool<unknown>

const event: AgentMachineEvent = { type: 'agent.start' }

/** Every combination the routing looks at, for one call of a reply. */
function* cases() {
  for (const hook of [false, true])
    for (const needsApproval of [undefined, false, true, () => true])
      for (const args of ['{"x": 1}', '{"x": "one"}'])
        for (const toolName of ['echo', 'missing'])
          for (const steering of [false, true])
            for (const handoff of [false, true]) yield { hook, needsApproval, args, toolName, steering, handoff }
}

describe('the fast path and the step-by-step path route a call alike', () => {
  it.each([...cases()])('%o', ({ hook, needsApproval, args, toolName, steering, handoff }) => {
    const tools = new Map([['echo', echo(needsApproval)]])
    const runtime = {
      hooks: new HookChain(hook ? { beforeToolExecution: () => undefined } : undefined),
      tools,
      budgetChecks: new Map(),
    } as unknown as AgentRuntime
    const prepare = createCallPreparer(tools)
    const guards = createMachineGuards(runtime, prepare)
    const call = { id: 'c1', type: 'function' as const, function: { name: toolName, arguments: args } }
    const context: AgentContext = {
      ...createContext({ agentId: 'a', runId: 'r', input: 'hi', maxTurns: 5, startedAt: 0 }),
      calls: [call],
      steering: steering ? [{ text: 'stop', from: 'user', at: 0 }] : [],
      handoff: handoff ? { to: 'other' } : undefined,
    }
    const opened: AgentContext = { ...context, current: openCall(call, prepare(call), 0) }
    // The step-by-step path, state by state, as the chart asks it (first match wins).
    const here = { context: opened, event }
    const slow: CallRoute = guards.callHandedOver(here)
      ? 'handed-over'
      : guards.callSteered(here)
        ? 'steered'
        : guards.callIsInvalid(here)
          ? 'invalid'
          : guards.callGoesToHook(here)
            ? 'hook'
            : guards.approvalAlways(here)
              ? 'approval'
              : guards.approvalByRule(here)
                ? 'approval-rule'
                : 'run'
    // Once the hook allowed it, a call that needs no approval runs.
    expect(guards.callRunsAtOnce(here)).toBe(slow === 'run' || (slow === 'hook' && !needsApproval))
    expect(guards.nextCallGoesToHook({ context, event })).toBe(slow === 'hook')
    expect(guards.nextCallRunsAtOnce({ context, event })).toBe(slow === 'run')
  })
})

/** Every combination the start of a turn looks at: its hooks, and each limit at its edge. */
function* turnCases() {
  for (const beforeTurn of [false, true])
    for (const beforeProviderCall of [false, true])
      for (const turnsLeft of [0, 1])
        for (const tokensLeft of [undefined, 0, 1])
          for (const budgetSpent of [false, true]) yield { beforeTurn, beforeProviderCall, turnsLeft, tokensLeft, budgetSpent }
}

describe('the direct jump into the next turn and the step-by-step path through beforeTurn start the turn alike', () => {
  it.each([...turnCases()])('%o', ({ beforeTurn, beforeProviderCall, turnsLeft, tokensLeft, budgetSpent }) => {
    const runtime = {
      hooks: new HookChain({
        ...(beforeTurn ? { beforeTurn: () => undefined } : {}),
        ...(beforeProviderCall ? { beforeProviderCall: () => undefined } : {}),
      }),
      tools: new Map(),
      budgetChecks: new Map(budgetSpent ? [['r', () => ({ code: 'BUDGET_EXCEEDED', message: 'spent' })]] : []),
    } as unknown as AgentRuntime
    const guards = createMachineGuards(runtime, createCallPreparer(new Map()))
    const call = { id: 'c1', type: 'function' as const, function: { name: 'echo', arguments: '{}' } }
    const base = createContext({ agentId: 'a', runId: 'r', input: 'hi', maxTurns: 3, startedAt: 0 })
    const used = 100
    // A turn whose calls are done: the turn now ending is `turn`; the next is `turn + 1`.
    const ending: AgentContext = {
      ...base,
      turn: 3 - turnsLeft,
      run: { ...base.run, maxTokens: tokensLeft === undefined ? undefined : used + tokensLeft },
      usage: { promptTokens: used, completionTokens: 0, totalTokens: used },
      calls: [call],
      callIndex: 1,
    }
    // The step-by-step path: the turn's entry counts it, then `beforeTurn` asks its guards (first match wins).
    const started: AgentContext = { ...ending, turn: ending.turn + 1 }
    const here = { context: started, event }
    const slow = guards.turnStarts(here, 'limit')
      ? 'limit'
      : guards.hasBeforeTurn(here)
        ? 'beforeTurn'
        : guards.hasBeforeProviderCall(here)
          ? 'beforeProviderCall'
          : 'model'
    // The direct jump, from each exit that ends a turn: exactly one of its next-turn guards holds, the same.
    const at = { context: ending, event }
    const entries = ['limit', 'beforeTurn', 'beforeProviderCall', 'model'] as const
    const fromCalls = entries.filter((entry) => guards.callsDone(at, `next-turn/${entry}`))
    const fromAfterTurn = entries.filter((entry) => guards.turnDone(at, `next-turn/${entry}`))
    const toolDone: AgentMachineEvent = { type: 'work.done', wait: 'executingTool', output: { output: 'ok' }, elapsedMs: 0 }
    const fromTool = entries.filter((entry) =>
      guards.toolAnswered({ context: { ...ending, callIndex: 0 }, event: toolDone }, `next-turn/${entry}`),
    )
    expect(fromCalls).toEqual([slow])
    expect(fromAfterTurn).toEqual([slow])
    expect(fromTool).toEqual([slow])
    // And the limit is the one the rule names: maxTurns first, then tokens, then the run's budget.
    const limited = turnsLeft === 0 || tokensLeft === 0 || budgetSpent
    expect(slow === 'limit').toBe(limited)
  })
})
