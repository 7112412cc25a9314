import { type AgentContext, createAgent, ScriptedReviewer, sequentialIds, tool } from '@signalbox/core'
import { agentMachine } from '@signalbox/core/internal'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { type AnyStateNode, createActor, SimulatedClock, waitFor } from 'xstate'
import { z } from 'zod'
import { runFailure } from './helpers.ts'

function stateKeys(node: AnyStateNode, into = new Set<string>()): Set<string> {
  for (const [key, child] of Object.entries(node.states)) {
    into.add(key)
    stateKeys(child, into)
  }
  return into
}

describe('the agent machine', () => {
  it('is exported with the loop phases and the five hook points as states', () => {
    const agent = createAgent({ provider: new ScriptedProvider({ script: [] }) })
    const keys = stateKeys(agent.machine.root)
    for (const state of [
      'idle',
      'running',
      'turn',
      'beforeTurn',
      'beforeProviderCall',
      'callingModel',
      'toolCalls',
      'steeringCheck',
      'beforeToolExecution',
      'awaitingApproval',
      'executingTool',
      'afterToolExecution',
      'afterTurn',
      'done',
      'failed',
      'cancelled',
    ]) {
      expect(keys, `state ${state}`).toContain(state)
    }
    expect(agent.machine.id).toBe('agent')
    // One machine for every agent: the runtime is bound to each run, not captured in the machine.
    expect(agent.machine).toBe(agentMachine)
    expect(createAgent({ id: 'other', provider: new ScriptedProvider({ script: [] }) }).machine).toBe(agentMachine)
  })

  it('refuses to run an actor of the shared machine that no agent started (no runtime is bound to it)', () => {
    const agent = createAgent({ provider: new ScriptedProvider({ script: [] }) })
    const actor = createActor(agent.machine, {
      input: { agentId: 'agent', runId: 'run_outside', input: 'hi', maxTurns: 3, startedAt: 0 },
    })
    const errors: unknown[] = []
    actor.subscribe({ error: (error) => errors.push(error) })
    actor.start()
    actor.send({ type: 'agent.start' })
    expect(actor.getSnapshot().status).toBe('error')
    expect(errors).toEqual([expect.objectContaining({ code: 'CONFIG_INVALID' })])
  })

  it('binds a run to its agent without adding anything a copy of its context carries', async () => {
    const runs: object[] = []
    const agent = createAgent({
      provider: new ScriptedProvider({ script: [{ content: 'done' }] }),
      inspect: (event) => {
        if (event.type !== '@xstate.snapshot') return
        const context = (event.snapshot as { context?: AgentContext }).context
        if (context && typeof context === 'object' && 'run' in context) runs.push(context.run)
      },
    })
    expect((await agent.run('hi')).status).toBe('done')
    expect(runs.length).toBeGreaterThan(1)
    const run = runs[0] as object
    // The binding is the record's own, hidden: the record is the same object for the whole run.
    expect(runs.every((r) => r === run)).toBe(true)
    expect(Object.keys(run).sort()).toEqual(
      ['agentId', 'agentPath', 'input', 'maxTokens', 'maxTurns', 'parentRunId', 'runId', 'runPath', 'startedAt'].sort(),
    )
    expect(Object.getOwnPropertySymbols({ ...run })).toEqual([])
    expect(structuredClone(run)).toEqual(JSON.parse(JSON.stringify(run)))
  })

  it('has done, failed and cancelled as its only final states', () => {
    const agent = createAgent({ provider: new ScriptedProvider({ script: [] }) })
    const finals = Object.entries(agent.machine.root.states)
      .filter(([, node]) => node.type === 'final')
      .map(([key]) => key)
    expect(finals.sort()).toEqual(['cancelled', 'done', 'failed'])
  })

  it('keeps the context JSON-serializable at every snapshot of a run with tools and approval', async () => {
    const clock = new SimulatedClock()
    const contexts: AgentContext[] = []
    const pay = tool({
      name: 'pay',
      description: 'Pay an invoice.',
      schema: z.object({ invoice: z.string(), amount: z.number() }),
      needsApproval: (args) => args.amount > 100,
      execute: async ({ invoice }) => ({ paid: invoice, at: 'now' }),
    })
    const lookup = tool({
      name: 'lookup',
      description: 'Look an invoice up.',
      schema: z.object({ invoice: z.string() }),
      execute: async ({ invoice }) => `invoice ${invoice}: 250 EUR`,
    })
    const provider = new ScriptedProvider({
      script: [
        { toolCalls: [{ id: 'c1', name: 'lookup', arguments: { invoice: 'A-1' } }] },
        {
          toolCalls: [
            { id: 'c2', name: 'pay', arguments: { invoice: 'A-1', amount: 250 } },
            { id: 'c3', name: 'pay', arguments: { invoice: 'B-2', amount: 250 } },
            { id: 'c4', name: 'nope', arguments: '{not json' },
          ],
        },
        { content: 'Paid A-1; B-2 was refused.' },
      ],
    })
    const agent = createAgent({
      provider,
      tools: [pay, lookup],
      reviewer: new ScriptedReviewer([true, { approved: false, reason: 'not this one' }], { clock }),
      hooks: { afterToolExecution: ({ output }) => output.replace('250', '***') },
      clock,
      ids: sequentialIds(),
      inspect: (event) => {
        if (event.type !== '@xstate.snapshot') return
        const context = (event.snapshot as { context?: AgentContext }).context
        if (context && typeof context === 'object' && 'run' in context) contexts.push(context)
      },
    })
    const result = await agent.run('Pay invoice A-1 and B-2.')
    expect(result.status).toBe('done')
    // Snapshots from idle through the approval waits to done.
    expect(contexts.length).toBeGreaterThan(10)
    expect(contexts.some((c) => c.current?.approval !== undefined)).toBe(true)
    for (const context of contexts) {
      expect(JSON.parse(JSON.stringify(context))).toEqual(context)
    }
  })

  it('exposes the current phase so a run can be watched (tags for waits)', async () => {
    const clock = new SimulatedClock()
    const drop = tool({ name: 'drop', description: 'Drop.', schema: z.object({}), needsApproval: true, execute: () => 'dropped' })
    const agent = createAgent({
      provider: new ScriptedProvider({ script: [{ toolCalls: [{ name: 'drop', arguments: {} }] }, { content: 'ok' }] }),
      tools: [drop],
      reviewer: new ScriptedReviewer(['never'], { clock }),
      clock,
    })
    const handle = agent.start('drop it')
    const waiting = await waitFor(handle.actor, (s) => s.matches({ running: { turn: { toolCalls: 'awaitingApproval' } } }))
    expect(waiting.hasTag('human')).toBe(true)
    handle.cancel('test over')
    const error = await runFailure(handle.result)
    expect(error.result.status).toBe('cancelled')
    expect(handle.actor.getSnapshot().value).toBe('cancelled')
  })
})
