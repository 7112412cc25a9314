import { expect, it } from 'vitest'
import { BusNoRespondersError, BusTimeoutError } from '../../../bus/errors.ts'
import { AbortedError } from '../../../errors.ts'
import { type OpenBus, rejectionOf, sleep } from './harness.ts'

/** The `Bus` contract on request and reply: answers, timeouts, no responders, cancellation. */
export function requestReplyTests(open: OpenBus): void {
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
    const replies = await Promise.all(Array.from({ length: 10 }, (_, i) => bus.request(subject, String(i), { timeoutMs: 2_000 })))
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
    const withSignal = await rejectionOf(bus.request(subject, 'x', { timeoutMs: 5_000, signal: new AbortController().signal }))
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
}
