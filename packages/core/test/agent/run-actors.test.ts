import { createAgent, RunCancelledError } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import type { InspectionEvent } from 'xstate'
import { ManualProvider } from './helpers.ts'

describe("a run's actor", () => {
  it('is a root actor; the runs of one agent share its actor system, other agents have their own', async () => {
    const provider = new ManualProvider()
    const agent = createAgent({ provider })
    const other = createAgent({ id: 'other', provider })
    const [a, b, c] = [agent.start('one'), agent.start('two'), other.start('three')]
    await provider.called(3)
    expect(a.actor.system).toBe(b.actor.system)
    expect(c.actor.system).not.toBe(a.actor.system)
    for (const run of [a, b, c]) expect(run.actor._parent).toBeUndefined()
    // A root actor can be stopped directly (a child actor's stop() throws): the run ends, its model call is aborted.
    expect(() => a.actor.stop()).not.toThrow()
    await expect(a.result).rejects.toBeInstanceOf(RunCancelledError)
    expect(provider.signals[0]?.aborted).toBe(true)
    // The others go on, and end as usual (the first pending call is the stopped run's).
    provider.reply({ content: 'too late' })
    provider.reply({ content: 'b done' })
    provider.reply({ content: 'c done' })
    await expect(b.result).resolves.toMatchObject({ output: 'b done' })
    await expect(c.result).resolves.toMatchObject({ output: 'c done' })
    expect(b.actor.getSnapshot().status).toBe('done')
  })

  it('has a system of its own when the agent is inspected: the inspector sees each run as the root it is', async () => {
    const events: InspectionEvent[] = []
    const agent = createAgent({
      provider: new ScriptedProvider({ script: [{ content: 'hi' }, { content: 'hi' }] }),
      inspect: (event) => events.push(event),
    })
    const [a, b] = [agent.start('one'), agent.start('two')]
    await Promise.all([a.result, b.result])
    expect(a.actor.system).not.toBe(b.actor.system)
    for (const run of [a, b]) {
      const registered = events.find((e) => e.type === '@xstate.actor' && e.actorRef === run.actor)
      expect(registered?.rootId).toBe(run.actor.sessionId)
      expect(run.actor._parent).toBeUndefined()
    }
  })
})
