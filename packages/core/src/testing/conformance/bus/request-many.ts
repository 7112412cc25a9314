import { expect, it } from 'vitest'
import { BusNoRespondersError, BusTimeoutError } from '../../../bus/errors.ts'
import { AbortedError } from '../../../errors.ts'
import { type OpenBus, rejectionOf } from './harness.ts'

/** The `Bus` contract on request-many (scatter-gather): every answer within the window. */
export function requestManyTests(open: OpenBus): void {
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

  it('requireReply: nobody listening, or nobody answering, fails as a request does; one reply is enough', async () => {
    const { bus, subjects, agent } = await open()
    const subject = subjects.control(agent)
    const none = await rejectionOf(bus.requestMany(subject, 'x', { timeoutMs: 5_000, requireReply: true }))
    expect(none).toBeInstanceOf(BusNoRespondersError)
    await bus.subscribe(subject, () => {}).ready // listens, never answers
    const silent = await rejectionOf(bus.requestMany(subject, 'x', { timeoutMs: 200, requireReply: true }))
    expect(silent).toBeInstanceOf(BusTimeoutError)
    expect(silent).toMatchObject({ timeoutMs: 200 })
    await bus.subscribe(subject, (m) => {
      m.respond('here')
    }).ready
    const replies = await bus.requestMany(subject, 'x', { timeoutMs: 5_000, stallMs: 100, requireReply: true })
    expect(replies.map((r) => r.text())).toEqual(['here'])
  })
}
