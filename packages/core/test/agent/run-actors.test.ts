import { createAgent, RunCancelledError, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { type AnyActorRef, createActor, createMachine, type InspectionEvent } from 'xstate'
import { z } from 'zod'
import { pinActionExecutor } from '../../src/machine/pinned-executor.ts'
import { ManualProvider } from './helpers.ts'

type Scope = { actionExecutor: (action: unknown) => void }
const scopeOf = (actor: AnyActorRef) => (actor as unknown as { _actorScope: Scope })._actorScope

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

  it('keeps the action executor XState made it with: what a microstep writes there is ignored, and every action still runs', async () => {
    const events: InspectionEvent[] = []
    const calls: string[] = []
    const echo = tool({
      name: 'echo',
      description: 'echoes',
      schema: z.object({ text: z.string() }),
      execute: async ({ text }) => text,
    })
    const script = [{ toolCalls: [{ name: 'echo', arguments: { text: 'hi' } }] }, { content: 'done' }]
    const hooks = {
      beforeTurn: () => void calls.push('beforeTurn'),
      beforeToolExecution: () => void calls.push('beforeToolExecution'),
      afterTurn: () => void calls.push('afterTurn'),
    }
    for (const inspect of [undefined, (event: InspectionEvent) => void events.push(event)]) {
      const agent = createAgent({
        provider: new ScriptedProvider({ script }),
        tools: [echo],
        hooks,
        ...(inspect ? { inspect } : {}),
      })
      const run = agent.start('go')
      const scope = scopeOf(run.actor)
      const original = scope.actionExecutor
      expect(typeof original).toBe('function')
      scope.actionExecutor = () => {
        throw new Error('a microstep-long executor must not be used')
      }
      expect(scope.actionExecutor).toBe(original)
      const result = await run.result
      expect(result.output).toBe('done')
      expect(result.messages.some((m) => m.role === 'tool' && m.content === 'hi')).toBe(true)
      expect(scope.actionExecutor).toBe(original)
    }
    const oneRun = ['beforeTurn', 'beforeToolExecution', 'afterTurn', 'beforeTurn', 'afterTurn']
    expect(calls).toEqual([...oneRun, ...oneRun])
    // The inspector still sees the actions XState runs through the pinned executor.
    expect(events.some((e) => e.type === '@xstate.action')).toBe(true)
  })

  it('leaves an actor of another shape as it is', () => {
    const actor = createActor(createMachine({}))
    const scope = scopeOf(actor) as Record<string, unknown>
    const executor = scope.actionExecutor
    delete scope.actionExecutor
    scope.actionExecutor = 'not a function'
    expect(pinActionExecutor(actor)).toBe(false)
    expect(Object.getOwnPropertyDescriptor(scope, 'actionExecutor')?.value).toBe('not a function')
    expect(pinActionExecutor({} as AnyActorRef)).toBe(false)
    scope.actionExecutor = executor
    expect(pinActionExecutor(actor)).toBe(true)
  })
})
