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
