/**
 * `tool.end`'s `durationMs` is how long the tool ran: not the beforeToolExecution hook before it,
 * nor the wait for a person's yes (that wait is `approval.decided`'s `latencyMs`). A call whose
 * tool never ran reports 0. Time is a SimulatedClock that the hook, the reviewer and the tool move.
 */
import { type AgentEventOf, createAgent, decideApproval, type Reviewer, tool } from '@signalbox/core'
import { ScriptedProvider, SimulatedClock } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'

describe('tool.end durationMs', () => {
  it('is the tool run alone: the hook and the approval wait are not in it; a denied call ran for 0 ms', async () => {
    const clock = new SimulatedClock()
    clock.set(1_000_000)
    const pay = tool({
      name: 'pay',
      description: 'Pay someone.',
      schema: z.object({ to: z.string() }),
      needsApproval: true,
      execute: ({ to }) => {
        clock.increment(40) // the tool's own work
        return `paid ${to}`
      },
    })
    // The person takes 5 s to say yes to alice, 2 s to say no to bob.
    const reviewer: Reviewer = {
      async review(request) {
        const to = (request.arguments as { to: string }).to
        clock.increment(to === 'alice' ? 5_000 : 2_000)
        return decideApproval(request, to === 'alice', 'tina', clock.now())
      },
    }
    const agent = createAgent({
      provider: new ScriptedProvider({
        script: [
          {
            toolCalls: [
              { id: 'c1', name: 'pay', arguments: { to: 'alice' } },
              { id: 'c2', name: 'pay', arguments: { to: 'bob' } },
            ],
          },
          { content: 'Paid alice; bob was refused.' },
        ],
      }),
      tools: [pay],
      reviewer,
      clock,
      hooks: {
        beforeToolExecution: () => {
          clock.increment(300) // a slow policy check
          return undefined
        },
      },
    })
    const ends: AgentEventOf<'tool.end'>[] = []
    const decided: AgentEventOf<'approval.decided'>[] = []
    agent.on('tool.end', (event) => ends.push(event))
    agent.on('approval.decided', (event) => decided.push(event))
    await agent.run('Pay alice and bob.')

    expect(ends.map((e) => [e.callId, e.outcome, e.durationMs])).toEqual([
      ['c1', 'executed', 40],
      ['c2', 'approval_denied', 0],
    ])
    // The wait for the person is reported where it belongs.
    expect(decided.map((e) => [e.request.callId, e.latencyMs])).toEqual([
      ['c1', 5_000],
      ['c2', 2_000],
    ])
  })

  it('counts a tool that fails from its start as well', async () => {
    const clock = new SimulatedClock()
    const broken = tool({
      name: 'broken',
      description: 'Fails after a while.',
      schema: z.object({}),
      execute: () => {
        clock.increment(75)
        throw new Error('disk full')
      },
    })
    const agent = createAgent({
      provider: new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'c1', name: 'broken', arguments: {} }] }, { content: 'It failed.' }],
      }),
      tools: [broken],
      clock,
      hooks: { beforeToolExecution: () => void clock.increment(1_000) },
    })
    const ends: AgentEventOf<'tool.end'>[] = []
    agent.on('tool.end', (event) => ends.push(event))
    await agent.run('Try.')
    expect(ends.map((e) => [e.outcome, e.durationMs])).toEqual([['failed', 75]])
  })
})
