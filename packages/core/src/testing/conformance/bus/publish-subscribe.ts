import { expect, it } from 'vitest'
import type { BusMessage } from '../../../bus/bus.ts'
import { BusPayloadTooLargeError, InvalidSubjectError } from '../../../bus/errors.ts'
import { eventually, type OpenBus, rejectionOf, sleep, thrownBy } from './harness.ts'

/** The `Bus` contract on publish and subscribe: delivery and its order, wildcards, queue groups, unsubscribe, subject and size checks. */
export function publishSubscribeTests(open: OpenBus): void {
  it('delivers subject, payload and no reply, asynchronously', async () => {
    const { bus, subjects, agent } = await open()
    const subject = subjects.events(agent, 'turn.start')
    const received: BusMessage[] = []
    const subscription = bus.subscribe(subject, (message) => {
      received.push(message)
    })
    await subscription.ready
    bus.publish(subject, 'hello')
    // Never called from inside publish().
    expect(received).toHaveLength(0)
    bus.publish(subject, new Uint8Array([1, 2, 3]))
    await eventually(() => received.length === 2, 'two messages')
    expect(received[0]?.subject).toBe(subject)
    expect(received[0]?.text()).toBe('hello')
    expect(received[0]?.reply).toBeUndefined()
    expect(received[0]?.respond('x')).toBe(false)
    expect([...(received[1]?.data ?? [])]).toEqual([1, 2, 3])
  })

  it('delivers in publish order to every subscriber', async () => {
    const { bus, subjects, agent } = await open()
    const subject = subjects.events(agent, 'tool.end')
    const first: number[] = []
    const second: number[] = []
    await bus.subscribe(subject, (m) => void first.push(Number(m.text()))).ready
    await bus.subscribe(subject, (m) => void second.push(Number(m.text()))).ready
    const expected = Array.from({ length: 200 }, (_, i) => i)
    for (const i of expected) bus.publish(subject, String(i))
    await eventually(() => first.length === 200 && second.length === 200, '200 messages on both')
    expect(first).toEqual(expected)
    expect(second).toEqual(expected)
  })

  it('`*` matches exactly one token', async () => {
    const { bus, subjects, agent } = await open()
    const got: string[] = []
    const pattern = `${subjects.prefix}.agents.*.control`
    await bus.subscribe(pattern, (m) => void got.push(m.subject)).ready
    bus.publish(subjects.control(`${agent}a`), 'x')
    bus.publish(subjects.control(`${agent}b`), 'x')
    bus.publish(`${subjects.prefix}.agents.${agent}.x.control`, 'no: two tokens')
    bus.publish(`${subjects.prefix}.agents.control`, 'no: zero tokens')
    bus.publish(subjects.events(agent, 'x'), 'no: other subject')
    bus.publish(subjects.control('end'), 'sentinel')
    await eventually(() => got.includes(subjects.control('end')), 'sentinel')
    expect(got).toEqual([subjects.control(`${agent}a`), subjects.control(`${agent}b`), subjects.control('end')])
  })

  it('`>` matches one or more trailing tokens', async () => {
    const { bus, subjects, agent } = await open()
    const got: string[] = []
    await bus.subscribe(`${subjects.prefix}.agents.${agent}.>`, (m) => void got.push(m.subject)).ready
    bus.publish(`${subjects.prefix}.agents.${agent}`, 'no: nothing after the prefix')
    bus.publish(subjects.control(agent), 'one token')
    bus.publish(subjects.events(agent, 'run.end'), 'two tokens')
    bus.publish(subjects.control(`${agent}x`), 'no: other agent')
    bus.publish(`${subjects.prefix}.agents.${agent}.end`, 'sentinel')
    await eventually(() => got.length >= 3, 'sentinel')
    await sleep(20)
    expect(got).toEqual([subjects.control(agent), subjects.events(agent, 'run.end'), `${subjects.prefix}.agents.${agent}.end`])
  })

  it('queue group: each message to exactly one member, every member gets some; plain subscribers get all', async () => {
    const { bus, subjects } = await open()
    const subject = subjects.tool('search')
    const a: string[] = []
    const b: string[] = []
    const all: string[] = []
    await bus.subscribe(subject, (m) => void a.push(m.text()), { queue: 'workers' }).ready
    await bus.subscribe(subject, (m) => void b.push(m.text()), { queue: 'workers' }).ready
    await bus.subscribe(subject, (m) => void all.push(m.text())).ready
    const sent = Array.from({ length: 40 }, (_, i) => `job-${i}`)
    for (const job of sent) bus.publish(subject, job)
    await eventually(() => a.length + b.length === 40 && all.length === 40, '40 jobs')
    await sleep(20)
    expect(a.length + b.length).toBe(40)
    expect(new Set([...a, ...b])).toEqual(new Set(sent))
    expect(a.length).toBeGreaterThan(0)
    expect(b.length).toBeGreaterThan(0)
    expect(all).toEqual(sent)
  })

  it('headers round-trip', async () => {
    const { bus, subjects, agent } = await open()
    const subject = subjects.events(agent, 'usage')
    let got: BusMessage | undefined
    await bus.subscribe(subject, (m) => {
      got = m
    }).ready
    bus.publish(subject, 'x', { headers: { 'X-Trace-Id': 'abc-123', 'signalbox-run': 'run_1' } })
    await eventually(() => got !== undefined, 'message')
    expect(got?.headers).toMatchObject({ 'X-Trace-Id': 'abc-123', 'signalbox-run': 'run_1' })
  })

  it('unsubscribe() stops delivery', async () => {
    const { bus, subjects, agent } = await open()
    const subject = subjects.events(agent, 'x')
    const got: string[] = []
    const witness: string[] = []
    const subscription = bus.subscribe(subject, (m) => void got.push(m.text()))
    await subscription.ready
    await bus.subscribe(subject, (m) => void witness.push(m.text())).ready
    bus.publish(subject, 'before')
    await eventually(() => got.length === 1, 'first message')
    subscription.unsubscribe()
    subscription.unsubscribe() // idempotent
    expect(subscription.closed).toBe(true)
    bus.publish(subject, 'after')
    await eventually(() => witness.length === 2, 'witness saw both')
    await sleep(30)
    expect(got).toEqual(['before'])
  })

  it('aborting the signal unsubscribes; an aborted signal never subscribes', async () => {
    const { bus, subjects, agent } = await open()
    const subject = subjects.events(agent, 'x')
    const controller = new AbortController()
    const got: string[] = []
    const witness: string[] = []
    const subscription = bus.subscribe(subject, (m) => void got.push(m.text()), { signal: controller.signal })
    const never = bus.subscribe(subject, (m) => void got.push(`never:${m.text()}`), { signal: AbortSignal.abort() })
    expect(never.closed).toBe(true)
    await subscription.ready
    await bus.subscribe(subject, (m) => void witness.push(m.text())).ready
    bus.publish(subject, 'before')
    await eventually(() => got.length === 1, 'first message')
    controller.abort()
    expect(subscription.closed).toBe(true)
    bus.publish(subject, 'after')
    await eventually(() => witness.length === 2, 'witness saw both')
    await sleep(30)
    expect(got).toEqual(['before'])
  })

  it('a throwing or rejecting handler does not kill its subscription', async () => {
    const { bus, subjects, agent } = await open()
    const subject = subjects.events(agent, 'x')
    const got: string[] = []
    await bus.subscribe(subject, (m) => {
      got.push(m.text())
      if (m.text() === 'throw') throw new Error('handler bug')
      if (m.text() === 'reject') return Promise.reject(new Error('async handler bug'))
    }).ready
    // Publishing must not throw even though the handler does.
    bus.publish(subject, 'throw')
    bus.publish(subject, 'reject')
    bus.publish(subject, 'fine')
    await eventually(() => got.length === 3, 'three messages')
    expect(got).toEqual(['throw', 'reject', 'fine'])
  })

  it('refuses illegal subjects with InvalidSubjectError', async () => {
    const { bus, subjects } = await open()
    for (const subject of ['', 'a..b', `${subjects.prefix}.*`, `${subjects.prefix}.>`, 'a b', '.a']) {
      expect(
        thrownBy(() => bus.publish(subject, 'x')),
        subject,
      ).toBeInstanceOf(InvalidSubjectError)
    }
    for (const pattern of ['a.>.b', 'a.b*', '', 'a..b']) {
      expect(
        thrownBy(() => bus.subscribe(pattern, () => {})),
        pattern,
      ).toBeInstanceOf(InvalidSubjectError)
    }
    expect(await rejectionOf(bus.request('a.*', 'x', { timeoutMs: 100 }))).toBeInstanceOf(InvalidSubjectError)
  })

  it('refuses a payload larger than maxPayload with BusPayloadTooLargeError, and accepts one at the limit', async () => {
    const { bus, subjects, agent } = await open()
    const subject = subjects.events(agent, 'big')
    expect(bus.maxPayload).toBeGreaterThanOrEqual(1024)
    const error = thrownBy(() => bus.publish(subject, new Uint8Array(bus.maxPayload + 1)))
    expect(error).toBeInstanceOf(BusPayloadTooLargeError)
    expect(error).toMatchObject({ code: 'BUS_PAYLOAD_TOO_LARGE', size: bus.maxPayload + 1, max: bus.maxPayload })
    expect(await rejectionOf(bus.request(subject, new Uint8Array(bus.maxPayload + 1), { timeoutMs: 100 }))).toBeInstanceOf(
      BusPayloadTooLargeError,
    )
    const got: number[] = []
    await bus.subscribe(subject, (m) => void got.push(m.data.length)).ready
    bus.publish(subject, new Uint8Array(bus.maxPayload))
    await eventually(() => got.length === 1, 'the message at the limit')
    expect(got).toEqual([bus.maxPayload])
  })
}
