/**
 * The `Bus` contract, written once and run against every transport (the in-process bus and the
 * NATS bus in signalbox's own tests; yours with `describeBusConformance`). Each test gets a fresh
 * subject prefix, so on a shared server tests never see each other's messages, streams or consumers.
 *
 * Durable tests use `audit` subjects: they are in the default durable set on NATS.
 */
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import type { Bus, BusMessage, DurableMessage } from '../../bus/bus.ts'
import {
  BusClosedError,
  BusNoRespondersError,
  BusPayloadTooLargeError,
  BusTimeoutError,
  InvalidSubjectError,
} from '../../bus/errors.ts'
import { createSubjects, type Subjects } from '../../bus/subjects.ts'
import { AbortedError } from '../../errors.ts'

export interface BusUnderTest {
  bus: Bus
  cleanup(): Promise<void>
}

/** Builds a bus for one test; `prefix` is the test's own subject prefix (the NATS bus needs it for its stream). */
export type MakeBus = (context: { prefix: string }) => Promise<BusUnderTest>

/** A fresh subject prefix (`t<hex>.v1`) per test. */
function uniquePrefix(): string {
  return `t${randomBytes(6).toString('hex')}.v1`
}

/** Polls `predicate` until true; fails with `what` after `timeoutMs`. */
async function eventually(predicate: () => boolean, what: string, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for: ${what}`)
    await sleep(5)
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Rejection of `promise`, failing the test if it resolves. */
async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection, but the promise resolved')
}

function thrownBy(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw, but the call returned')
}

/**
 * Defines vitest tests that hold a `Bus` implementation to the contract signalbox's own buses
 * meet (publish and subscribe, wildcards, queue groups, request and reply, durable streams,
 * acknowledgement and redelivery, limits, closing). Call it in a test file:
 *
 *   describeBusConformance('my bus', async ({ prefix }) => {
 *     const bus = await connectMyBus({ prefix })
 *     return { bus, cleanup: () => bus.close() }
 *   })
 */
export function describeBusConformance(name: string, makeBus: MakeBus): void {
  describe(`Bus conformance: ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = []
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    })

    async function open(): Promise<{ bus: Bus; subjects: Subjects; agent: string }> {
      const prefix = uniquePrefix()
      const { bus, cleanup } = await makeBus({ prefix })
      cleanups.push(cleanup)
      return { bus, subjects: createSubjects(prefix), agent: `agent-${Math.random().toString(36).slice(2, 8)}` }
    }

    describe('publish/subscribe', () => {
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
        expect(got).toEqual([
          subjects.control(agent),
          subjects.events(agent, 'run.end'),
          `${subjects.prefix}.agents.${agent}.end`,
        ])
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
    })

    describe('request/reply', () => {
      it('returns the reply (payload and headers), with or without a signal', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.control(agent)
        await bus.subscribe(subject, (m) => {
          m.respond(m.text().toUpperCase(), { headers: { 'X-Answered-By': 'responder', 'X-Asked': m.headers?.['X-Ask'] ?? '' } })
        }).ready
        const reply = await bus.request(subject, 'status?', { timeoutMs: 2_000, headers: { 'X-Ask': 'q1' } })
        expect(reply.text()).toBe('STATUS?')
        expect(reply.headers).toMatchObject({ 'X-Answered-By': 'responder', 'X-Asked': 'q1' })
        const withSignal = await bus.request(subject, 'again', { timeoutMs: 2_000, signal: new AbortController().signal })
        expect(withSignal.text()).toBe('AGAIN')
      })

      it('a queue group answers each request once', async () => {
        const { bus, subjects } = await open()
        const subject = subjects.tool('calc')
        let answered = 0
        for (const worker of ['w1', 'w2']) {
          await bus.subscribe(
            subject,
            (m) => {
              answered++
              m.respond(`${worker}:${m.text()}`)
            },
            { queue: 'calc-workers' },
          ).ready
        }
        const replies = await Promise.all(
          Array.from({ length: 10 }, (_, i) => bus.request(subject, String(i), { timeoutMs: 2_000 })),
        )
        expect(replies.map((r) => r.text().split(':')[1])).toEqual(Array.from({ length: 10 }, (_, i) => String(i)))
        await sleep(20)
        expect(answered).toBe(10)
      })

      it('fails with BusTimeoutError after timeoutMs when nobody answers', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.control(agent)
        await bus.subscribe(subject, () => {}).ready // listens, never answers
        const started = Date.now()
        const error = await rejectionOf(bus.request(subject, 'x', { timeoutMs: 150 }))
        const elapsed = Date.now() - started
        expect(error).toBeInstanceOf(BusTimeoutError)
        expect(error).toMatchObject({ code: 'BUS_TIMEOUT', subject })
        expect(elapsed).toBeGreaterThanOrEqual(140)
        expect(elapsed).toBeLessThan(1_500)
        const withSignal = await rejectionOf(bus.request(subject, 'x', { timeoutMs: 150, signal: new AbortController().signal }))
        expect(withSignal).toBeInstanceOf(BusTimeoutError)
      })

      it('fails with BusNoRespondersError at once when nobody listens', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.control(agent)
        const started = Date.now()
        const error = await rejectionOf(bus.request(subject, 'x', { timeoutMs: 5_000 }))
        expect(error).toBeInstanceOf(BusNoRespondersError)
        expect(error).toMatchObject({ code: 'BUS_NO_RESPONDERS', subject })
        const withSignal = await rejectionOf(
          bus.request(subject, 'x', { timeoutMs: 5_000, signal: new AbortController().signal }),
        )
        expect(withSignal).toBeInstanceOf(BusNoRespondersError)
        // Well under the timeout: the caller can fall back (deny, try elsewhere) immediately.
        expect(Date.now() - started).toBeLessThan(1_000)
      })

      it('fails with AbortedError when the signal aborts, before the timeout', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.control(agent)
        await bus.subscribe(subject, () => {}).ready
        const controller = new AbortController()
        const started = Date.now()
        setTimeout(() => controller.abort(new Error('user cancelled')), 30)
        const error = await rejectionOf(bus.request(subject, 'x', { timeoutMs: 5_000, signal: controller.signal }))
        expect(error).toBeInstanceOf(AbortedError)
        expect(Date.now() - started).toBeLessThan(1_000)
        expect(await rejectionOf(bus.request(subject, 'x', { timeoutMs: 5_000, signal: AbortSignal.abort() }))).toBeInstanceOf(
          AbortedError,
        )
      })
    })

    describe('request-many (scatter-gather)', () => {
      it('gathers the reply of every subscriber, a queue group answering once', async () => {
        const { bus, subjects } = await open()
        const subject = subjects.tool('catalog')
        for (const host of ['a', 'b']) {
          await bus.subscribe(subject, (m) => {
            m.respond(`${host}:${m.text()}`, { headers: { 'X-Host': host } })
          }).ready
        }
        let pooled = 0
        for (const worker of ['w1', 'w2']) {
          await bus.subscribe(
            subject,
            (m) => {
              pooled++
              m.respond(`pool-${worker}:${m.text()}`)
            },
            { queue: 'pool' },
          ).ready
        }
        const replies = await bus.requestMany(subject, 'who?', { timeoutMs: 3_000, stallMs: 500 })
        const texts = replies.map((r) => r.text()).sort()
        expect(texts).toHaveLength(3)
        expect(texts.slice(0, 2)).toEqual(['a:who?', 'b:who?'])
        expect(texts[2]).toMatch(/^pool-w[12]:who\?$/)
        expect(pooled).toBe(1)
        expect(replies.find((r) => r.text() === 'a:who?')?.headers).toMatchObject({ 'X-Host': 'a' })
      })

      it('stops at maxReplies; a listener that never answers leaves the others’ replies at the stall', async () => {
        const { bus, subjects } = await open()
        const subject = subjects.tool('catalog')
        await bus.subscribe(subject, (m) => {
          m.respond('one')
        }).ready
        await bus.subscribe(subject, (m) => {
          m.respond('two')
        }).ready
        await bus.subscribe(subject, () => {}).ready // listens, never answers
        expect((await bus.requestMany(subject, 'x', { timeoutMs: 5_000, maxReplies: 1 })).map((r) => r.text())).toHaveLength(1)
        const started = Date.now()
        const replies = await bus.requestMany(subject, 'x', { timeoutMs: 5_000, stallMs: 150 })
        expect(replies.map((r) => r.text()).sort()).toEqual(['one', 'two'])
        // Ended by the stall after the last reply, well before the timeout.
        expect(Date.now() - started).toBeLessThan(3_000)
      })

      it('nobody listens: no replies, at once; an aborted signal is an AbortedError', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.control(agent)
        const started = Date.now()
        expect(await bus.requestMany(subject, 'x', { timeoutMs: 5_000 })).toEqual([])
        expect(Date.now() - started).toBeLessThan(1_000)
        await bus.subscribe(subject, () => {}).ready
        const controller = new AbortController()
        setTimeout(() => controller.abort(new Error('user cancelled')), 30)
        expect(await rejectionOf(bus.requestMany(subject, 'x', { timeoutMs: 5_000, signal: controller.signal }))).toBeInstanceOf(
          AbortedError,
        )
      })
    })

    describe('durable path', () => {
      it('de-duplicates by msgId: the second publish reports duplicate and is delivered once', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.audit(agent, 'approval.decision')
        const got: DurableMessage[] = []
        const consumer = bus.durableConsume(subject, (m) => {
          got.push(m)
          m.ack()
        })
        await consumer.ready
        const first = await bus.durablePublish(subject, 'decision-1', { msgId: 'm1' })
        const again = await bus.durablePublish(subject, 'decision-1 (retry)', { msgId: 'm1' })
        const other = await bus.durablePublish(subject, 'decision-2', { msgId: 'm2', headers: { 'X-Kind': 'decision' } })
        expect(first.duplicate).toBe(false)
        expect(again).toEqual({ seq: first.seq, duplicate: true })
        expect(other.duplicate).toBe(false)
        expect(other.seq).toBeGreaterThan(first.seq)
        await eventually(() => got.length === 2, 'two messages')
        await sleep(50)
        expect(got.map((m) => m.text())).toEqual(['decision-1', 'decision-2'])
        expect(got.map((m) => m.seq)).toEqual([first.seq, other.seq])
        expect(got[1]?.headers).toMatchObject({ 'X-Kind': 'decision' })
        expect(got[0]?.subject).toBe(subject)
      })

      it('a private consumer starts at new messages; deliverAll replays the log', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.audit(agent, 'tool.call')
        for (const i of [1, 2, 3]) await bus.durablePublish(subject, `old-${i}`, { msgId: `old-${i}` })
        const fresh: string[] = []
        const replay: string[] = []
        await bus.durableConsume(subject, (m) => {
          fresh.push(m.text())
          m.ack()
        }).ready
        await bus.durableConsume(
          subject,
          (m) => {
            replay.push(m.text())
            m.ack()
          },
          { deliverAll: true },
        ).ready
        await bus.durablePublish(subject, 'new-1', { msgId: 'new-1' })
        await eventually(() => fresh.length === 1 && replay.length === 4, 'deliveries')
        expect(fresh).toEqual(['new-1'])
        expect(replay).toEqual(['old-1', 'old-2', 'old-3', 'new-1'])
      })

      it('consumers sharing a durable name get each message exactly once between them', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.audit(agent, 'run.end')
        const byConsumer: Record<string, string[]> = { a: [], b: [] }
        for (const id of ['a', 'b'] as const) {
          await bus.durableConsume(
            subject,
            (m) => {
              byConsumer[id]?.push(m.text())
              m.ack()
            },
            { durableName: 'auditors' },
          ).ready
        }
        const sent = Array.from({ length: 30 }, (_, i) => `entry-${i}`)
        await Promise.all(sent.map((text) => bus.durablePublish(subject, text, { msgId: text })))
        const total = () => (byConsumer.a?.length ?? 0) + (byConsumer.b?.length ?? 0)
        await eventually(() => total() === 30, '30 entries')
        await sleep(100)
        expect(total()).toBe(30)
        expect(new Set([...(byConsumer.a ?? []), ...(byConsumer.b ?? [])])).toEqual(new Set(sent))
      })

      it('redelivers a message not acknowledged within ackWaitMs', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.audit(agent, 'approval.request')
        const deliveries: number[] = []
        await bus.durableConsume(
          subject,
          (m) => {
            deliveries.push(Date.now())
            if (deliveries.length > 1) m.ack() // the first delivery is "lost" (no ack)
          },
          { ackWaitMs: 300 },
        ).ready
        await bus.durablePublish(subject, 'needs an answer', { msgId: 'r1' })
        await eventually(() => deliveries.length >= 2, 'a redelivery', 4_000)
        expect((deliveries[1] ?? 0) - (deliveries[0] ?? 0)).toBeGreaterThanOrEqual(250)
        await sleep(500)
        expect(deliveries).toHaveLength(2) // acknowledged: no third delivery
      })

      it('nak() redelivers at once, or after its delay', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.audit(agent, 'nak')
        const deliveries: { text: string; at: number }[] = []
        await bus.durableConsume(
          subject,
          (m) => {
            const seen = deliveries.filter((d) => d.text === m.text()).length
            deliveries.push({ text: m.text(), at: Date.now() })
            if (seen > 0) return m.ack()
            m.nak(m.text() === 'later' ? 300 : undefined)
          },
          { ackWaitMs: 10_000 },
        ).ready
        await bus.durablePublish(subject, 'now', { msgId: 'now' })
        await eventually(() => deliveries.filter((d) => d.text === 'now').length === 2, 'immediate redelivery')
        const nowTimes = deliveries.filter((d) => d.text === 'now').map((d) => d.at)
        expect((nowTimes[1] ?? 0) - (nowTimes[0] ?? 0)).toBeLessThan(1_000) // not the 10 s ack wait
        await bus.durablePublish(subject, 'later', { msgId: 'later' })
        await eventually(() => deliveries.filter((d) => d.text === 'later').length === 2, 'delayed redelivery')
        const laterTimes = deliveries.filter((d) => d.text === 'later').map((d) => d.at)
        expect((laterTimes[1] ?? 0) - (laterTimes[0] ?? 0)).toBeGreaterThanOrEqual(250)
      })

      it('working() postpones redelivery', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.audit(agent, 'slow')
        let deliveries = 0
        await bus.durableConsume(
          subject,
          (m) => {
            deliveries++
            // A person takes 1.5 s to decide; the ack wait is 800 ms.
            const keepAlive = setInterval(() => m.working(), 200)
            setTimeout(() => {
              clearInterval(keepAlive)
              m.ack()
            }, 1_500)
          },
          { ackWaitMs: 800 },
        ).ready
        await bus.durablePublish(subject, 'decide', { msgId: 'w1' })
        await eventually(() => deliveries === 1, 'first delivery')
        await sleep(2_000)
        expect(deliveries).toBe(1)
      })

      it('a throwing handler does not kill the consumer (the message comes back)', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.audit(agent, 'bug')
        const got: string[] = []
        await bus.durableConsume(
          subject,
          (m) => {
            got.push(m.text())
            if (m.text() === 'boom' && got.filter((t) => t === 'boom').length === 1) throw new Error('handler bug')
            m.ack()
          },
          { ackWaitMs: 300 },
        ).ready
        await bus.durablePublish(subject, 'boom', { msgId: 'b1' })
        await bus.durablePublish(subject, 'fine', { msgId: 'b2' })
        await eventually(() => got.filter((t) => t === 'boom').length === 2 && got.includes('fine'), 'both, boom twice', 4_000)
      })

      it('unsubscribe() stops a durable consumer', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.audit(agent, 'stop')
        const got: string[] = []
        const witness: string[] = []
        const consumer = bus.durableConsume(subject, (m) => {
          got.push(m.text())
          m.ack()
        })
        await consumer.ready
        await bus.durableConsume(subject, (m) => {
          witness.push(m.text())
          m.ack()
        }).ready
        await bus.durablePublish(subject, 'one', { msgId: 's1' })
        await eventually(() => got.length === 1, 'first')
        consumer.unsubscribe()
        expect(consumer.closed).toBe(true)
        await bus.durablePublish(subject, 'two', { msgId: 's2' })
        await eventually(() => witness.length === 2, 'witness saw both')
        await sleep(50)
        expect(got).toEqual(['one'])
      })

      it('durableLast reads the newest stored message of one subject, or nothing', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.runResult(`run-${agent}`)
        expect(await bus.durableLast(subject)).toBeUndefined()
        await bus.durablePublish(subject, 'first', { msgId: `${agent}-l1` })
        await bus.durablePublish(subjects.runResult(`other-${agent}`), 'other', { msgId: `${agent}-l2` })
        const second = await bus.durablePublish(subject, 'second', { msgId: `${agent}-l3`, headers: { 'X-Kind': 'result' } })
        const last = await bus.durableLast(subject)
        expect(last && new TextDecoder().decode(last.data)).toBe('second')
        expect(last).toMatchObject({ subject, seq: second.seq })
        expect(last?.headers?.['X-Kind']).toBe('result')
        expect(last?.storedAt).toBeGreaterThan(0)
        const aborted = new AbortController()
        aborted.abort()
        expect(await rejectionOf(bus.durableLast(subject, { signal: aborted.signal }))).toBeInstanceOf(AbortedError)
      })
    })

    describe('close()', () => {
      it('is idempotent; afterwards every operation fails with BusClosedError', async () => {
        const { bus, subjects, agent } = await open()
        await Promise.all([bus.close(), bus.close()])
        await bus.close()
        const subject = subjects.events(agent, 'x')
        expect(thrownBy(() => bus.publish(subject, 'x'))).toBeInstanceOf(BusClosedError)
        expect(thrownBy(() => bus.subscribe(subject, () => {}))).toBeInstanceOf(BusClosedError)
        expect(await rejectionOf(bus.request(subjects.control(agent), 'x', { timeoutMs: 100 }))).toBeInstanceOf(BusClosedError)
        expect(await rejectionOf(bus.durablePublish(subjects.audit(agent, 'x'), 'x', { msgId: 'c1' }))).toBeInstanceOf(
          BusClosedError,
        )
        expect(thrownBy(() => bus.durableConsume(subjects.audit(agent, 'x'), () => {}))).toBeInstanceOf(BusClosedError)
      })

      it('fails a pending request with BusClosedError', async () => {
        const { bus, subjects, agent } = await open()
        const subject = subjects.control(agent)
        await bus.subscribe(subject, () => {}).ready
        const pending = rejectionOf(bus.request(subject, 'x', { timeoutMs: 5_000 }))
        await sleep(20)
        const started = Date.now()
        await bus.close()
        const error = await pending
        expect(Date.now() - started).toBeLessThan(2_000)
        expect(error).toBeInstanceOf(BusClosedError)
      })
    })
  })
}
