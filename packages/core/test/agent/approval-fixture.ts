/** The approval tests' fixture: one reply paying ACME, a simulated clock, events and audit at hand. */

import { type AgentOptions, createAgent, type MemoryAuditLog, type Reviewer, sequentialIds, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { SimulatedClock } from 'xstate'
import { z } from 'zod'
import { recordEvents, toolResultIn } from './helpers.ts'

export function payTool(needsApproval: boolean | ((args: { to: string; amount: number }) => boolean) = true) {
  const paid: { to: string; amount: number }[] = []
  const t = tool({
    name: 'pay',
    description: 'Pay someone. Irreversible.',
    schema: z.object({ to: z.string(), amount: z.number() }),
    needsApproval,
    execute: (args) => {
      paid.push(args)
      return `paid ${args.amount} to ${args.to}`
    },
  })
  return { tool: t, paid }
}

export interface SetupOptions extends Partial<Omit<AgentOptions, 'reviewer'>> {
  calls?: { id: string; amount: number }[]
  reviewer?: Reviewer | ((clock: SimulatedClock) => Reviewer)
}

/** One reply paying ACME (call `c1`, 250 by default), then a final answer; the clock starts at 1,000,000. */
export function setup(options: SetupOptions = {}) {
  const { calls = [{ id: 'c1', amount: 250 }], reviewer, ...rest } = options
  const clock = new SimulatedClock()
  clock.set(1_000_000)
  const pay = payTool()
  const provider = new ScriptedProvider({
    script: [
      { toolCalls: calls.map((c) => ({ id: c.id, name: 'pay', arguments: { to: 'ACME', amount: c.amount } })) },
      { content: 'over' },
    ],
  })
  const agent = createAgent({
    provider,
    tools: [pay.tool],
    clock,
    ids: sequentialIds(),
    ...(reviewer ? { reviewer: typeof reviewer === 'function' ? reviewer(clock) : reviewer } : {}),
    ...rest,
  })
  const events = recordEvents(agent)
  const audit = () => (agent.audit as MemoryAuditLog).entries
  const read = (id = 'c1') => toolResultIn(provider.requests[1]?.messages ?? [], id) ?? ''
  return { clock, agent, events, audit, read, paid: pay.paid, provider }
}
