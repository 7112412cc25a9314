import { describeBusConformance } from '@signalbox/core/testing/conformance'
import { describe, expect, it } from 'vitest'
import { SimulatedClock } from 'xstate'
import type { DurableMessage } from '../../src/bus/bus.ts'
import { DurableConsumerConflictError, DurableSubjectError, InvalidSubjectError } from '../../src/bus/errors.ts'
import { createInProcessBus } from '../../src/bus/in-process-bus.ts'
import { createSubjects, defaultDurableSubjects } from '../../src/bus/subjects.ts'
import type { Clock } from '../../src/clock.ts'
import { eventually, sleep } from './helpers.ts'

describeBusConformance('in-process', async () => {
  const bus = createInProcessBus()
  return { bus, cleanup: () => bus.close() }
})

describe('InProcessBus specifics', () => {
  it('reports handler errors to onHandlerError and counts them', async () => {
    const reported: { error: unknown; subject: string; durable: boolean }[] = []
    const bus = createInProcessBus({ onHandlerError: (error, context) => reported.push({ error, ...context }) })
    bus.subscribe('a.b', () => {
      throw new Error('sync')
    })
    bus.subscribe('a.*', async () => {
      throw new Error('async')
    })
    bus.publish('a.b', 'x')
    await eventually(() => reported.length === 2, 'two reports')
    expect(bus.handlerErrors).toBe(2)
    expect(reported.map((r) => (r.error as Error).message).sort()).toEqual(['async', 'sync'])
    expect(reported.every((r) => r.subject === 'a.b' && !r.durable)).toBe(true)
    await bus.close()
  })

  it('with durableSubjects, behaves like a NATS deployment (durable-only subjects, DurableSubjectError)', async () => {
    const subjects = createSubjects()
    const bus = createInProcessBus({ durableSubjects: defaultDurableSubjects() })
    await expect(bus.durablePublish(subjects.events('a', 'x'), 'x', { msgId: '1' })).rejects.toBeInstanceOf(DurableSubjectError)
    expect(() => bus.durableConsume(subjects.tool('t'), () => {})).toThrow(DurableSubjectError)
    // A filter wider than the durable store is not covered either.
    expect(() => bus.durableConsume(`${subjects.prefix}.>`, () => {})).toThrow(DurableSubjectError)
    expect(() => bus.publish(subjects.approvals('a'), 'x')).toThrow(InvalidSubjectError)
    await expect(bus.request(subjects.ask('a'), 'x', { timeoutMs: 100 })).rejects.toBeInstanceOf(InvalidSubjectError)
    expect((await bus.durablePublish(subjects.steer('a'), 'x', { msgId: '1' })).duplicate).toBe(false)
    await bus.close()
  })

  it('refuses a durable name reused with another subject', async () => {
    const bus = createInProcessBus()
    bus.durableConsume('x.a', () => {}, { durableName: 'd' })
    expect(() => bus.durableConsume('x.b', () => {}, { durableName: 'd' })).toThrow(DurableConsumerConflictError)
    await bus.close()
  })

  it('a durable consumer resumes where its name left off; durable messages carry Nats-Msg-Id', async () => {
    const bus = createInProcessBus()
    const first: DurableMessage[] = []
    const sub = bus.durableConsume(
      'log.x',
      (m) => {
        first.push(m)
        m.ack()
      },
      { durableName: 'reader' },
    )
    await bus.durablePublish('log.x', '1', { msgId: 'one' })
    await eventually(() => first.length === 1, 'first')
    sub.unsubscribe()
    await bus.durablePublish('log.x', '2', { msgId: 'two' })
    const second: string[] = []
    bus.durableConsume(
      'log.x',
      (m) => {
        second.push(m.text())
        m.ack()
      },
      { durableName: 'reader' },
    )
    await eventually(() => second.length === 1, 'second')
    await sleep(10)
    expect(second).toEqual(['2'])
    expect(first[0]?.headers).toEqual({ 'Nats-Msg-Id': 'one' })
    await bus.close()
  })

  it('runs request timeouts, ack waits and the de-dup window on the injected clock', async () => {
    const simulated = new SimulatedClock()
    let now = 0
    const clock: Clock = {
      now: () => now,
      setTimeout: (fn, ms) => simulated.setTimeout(fn, ms),
      clearTimeout: (id) => simulated.clearTimeout(id as number),
    }
    const advance = (ms: number) => {
      now += ms
      simulated.increment(ms)
    }
    const bus = createInProcessBus({ clock, duplicateWindowMs: 1_000 })
    bus.subscribe('svc', () => {})
    const pending = bus.request('svc', 'x', { timeoutMs: 60_000 }).then(
      () => 'replied',
      (error: Error) => error.name,
    )
    advance(60_000)
    expect(await pending).toBe('BusTimeoutError')

    let deliveries = 0
    bus.durableConsume('jobs', () => void deliveries++, { ackWaitMs: 30_000 })
    await bus.durablePublish('jobs', 'x', { msgId: 'j1' })
    await eventually(() => deliveries === 1, 'delivery')
    advance(30_000)
    await eventually(() => deliveries === 2, 'redelivery after the simulated ack wait')

    expect((await bus.durablePublish('other', 'x', { msgId: 'd1' })).duplicate).toBe(false)
    advance(999)
    expect((await bus.durablePublish('other', 'x', { msgId: 'd1' })).duplicate).toBe(true)
    advance(1)
    expect((await bus.durablePublish('other', 'x', { msgId: 'd1' })).duplicate).toBe(false)
    await bus.close()
  })

  it('trims the durable log to maxDurableMessages', async () => {
    const bus = createInProcessBus({ maxDurableMessages: 10 })
    for (let i = 0; i < 50; i++) await bus.durablePublish('log', String(i), { msgId: String(i) })
    const replay: string[] = []
    bus.durableConsume(
      'log',
      (m) => {
        replay.push(m.text())
        m.ack()
      },
      { deliverAll: true },
    )
    await eventually(() => replay.length >= 10, 'replay')
    await sleep(10)
    expect(replay.length).toBeLessThanOrEqual(10 + (10 >> 4) + 1)
    expect(replay.at(-1)).toBe('49')
    await bus.close()
  })
})
