/**
 * Agents with any output type in a system: `add` and `connectAgent` take them as they are (no
 * cast), `run` is typed by the agent asked when the system knows it (added with a literal id),
 * `unknown` otherwise; a structured answer crosses the bus as its JSON text.
 */
import { connectAgent } from '@signalbox/actors'
import { createAgentSystem, type SystemRunResult } from '@signalbox/actors/system'
import { createAgent } from '@signalbox/core'
import { createInProcessBus, createSubjects } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'

const Booking = z.object({ train: z.number(), seats: z.number() })

function booker() {
  return createAgent({
    id: 'booker',
    output: Booking,
    provider: new ScriptedProvider({ model: 'booker', script: () => ({ content: '{"train":17,"seats":2}' }) }),
  })
}

function chat() {
  return createAgent({
    id: 'chat',
    provider: new ScriptedProvider({ model: 'chat', script: () => ({ content: 'hello' }) }),
  })
}

describe('typed agent systems', () => {
  it('run returns the output type of a known agent, unknown for any other', async () => {
    const system = createAgentSystem().add(booker()).add(chat())
    const booked = await system.run('booker', 'Two seats on the 17.')
    expectTypeOf(booked).toEqualTypeOf<SystemRunResult<{ train: number; seats: number }>>()
    expect(booked.output).toEqual({ train: 17, seats: 2 })
    const said = await system.run('chat', 'Hi.')
    expectTypeOf(said.output).toEqualTypeOf<string>()
    expect(said.output).toBe('hello')
    const elsewhere: string = 'chat'
    expectTypeOf(system.run(elsewhere, 'Hi.')).resolves.toEqualTypeOf<SystemRunResult<unknown>>()
    // An agent whose id is not a literal type is added, but not typed by it.
    const loose = createAgent({
      id: String('loose'),
      provider: new ScriptedProvider({ model: 'loose', script: () => ({ content: 'free' }) }),
    })
    const withLoose = system.add(loose)
    expectTypeOf(withLoose.run('loose', 'Hi.')).resolves.toEqualTypeOf<SystemRunResult<unknown>>()
    expect((await withLoose.run('loose', 'Hi.')).output).toBe('free')
  })

  it('a structured agent on a host: connected without a cast, its answer crosses the bus as JSON', async () => {
    const bus = createInProcessBus()
    const subjects = createSubjects()
    const structured = booker()
    const connection = connectAgent(structured, { bus, subjects })
    await connection.ready
    connection.close()
    const host = createAgentSystem({ bus, subjects, hostId: 'host' }).add(structured)
    await host.serve()
    const parent = createAgentSystem({ bus, subjects, hostId: 'parent' })
    const result = await parent.run('booker', 'Two seats on the 17.')
    expectTypeOf(result.output).toEqualTypeOf<unknown>()
    expect(JSON.parse(String(result.output))).toEqual({ train: 17, seats: 2 })
    await Promise.all([parent.close(), host.close()])
    await bus.close()
  })
})
