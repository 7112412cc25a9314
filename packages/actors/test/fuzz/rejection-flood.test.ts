/**
 * The rejection reporter under a flood: 10,000 junk messages make a bounded number of
 * `rejection` notices whose counts add up to exactly 10,000 (each rejection recorded once),
 * and a new window reports one by one again.
 */
import { type Clock, createInProcessBus, createSubjects, decodeMessage, ProtocolError, RejectionMessage } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { createRejectionReporter, DEFAULT_REJECTION_LIMITS } from '../../src/index.ts'

/** A clock the test moves by hand: timers fire only when it is advanced past them. */
function manualClock(start = 1_000_000): Clock & { advance(ms: number): void } {
  let now = start
  let nextId = 0
  const timers = new Map<number, { at: number; fn: () => void }>()
  return {
    now: () => now,
    setTimeout(fn, ms) {
      const id = ++nextId
      timers.set(id, { at: now + ms, fn })
      return id
    },
    clearTimeout(id) {
      timers.delete(id as number)
    },
    advance(ms) {
      now += ms
      for (const [id, timer] of [...timers].sort((a, b) => a[1].at - b[1].at)) {
        if (timer.at > now) continue
        timers.delete(id)
        timer.fn()
      }
    },
  }
}

function setup() {
  const subjects = createSubjects('flood.v1')
  const bus = createInProcessBus()
  const clock = manualClock()
  const notices: RejectionMessage[] = []
  bus.subscribe(subjects.errors('agent-x'), (message) => {
    const decoded = decodeMessage(message.data, RejectionMessage)
    if (!decoded.ok) throw decoded.error
    notices.push(decoded.value)
  })
  const report = createRejectionReporter({ bus, subjects, component: 'agent-x', clock })
  return { bus, clock, notices, report, subjects }
}

/** The in-process bus delivers in a microtask: let the deliveries run. */
const delivered = () => new Promise((resolve) => setImmediate(resolve))

const junk = (n: number) => new ProtocolError('PROTOCOL_INVALID_JSON', `junk ${n}`)
const total = (notices: RejectionMessage[]) => notices.reduce((sum, n) => sum + (n.count ?? 1), 0)

describe('rejection reporter under a flood', () => {
  it('10,000 junk messages: at most burst + summaries notices, counts adding up to 10,000', async () => {
    const { bus, clock, notices, report } = setup()
    const { burst, windowMs, maxSummaries } = DEFAULT_REJECTION_LIMITS
    const reported: boolean[] = []
    for (let i = 0; i < 10_000; i++) reported.push(report('flood.v1.agents.x.steer', `{"junk":${i}`, junk(i)))
    await delivered()
    // The first `burst` go out one by one; the rest wait for the window's summary.
    expect(reported.filter(Boolean)).toHaveLength(burst)
    expect(notices).toHaveLength(burst)
    expect(notices.every((n) => n.count === undefined)).toBe(true)

    clock.advance(windowMs)
    await delivered()
    expect(notices).toHaveLength(burst + 1)
    const summary = notices[burst] as RejectionMessage
    expect(summary.count).toBe(10_000 - burst)
    expect(summary.error.code).toBe('PROTOCOL_INVALID_JSON')
    expect(summary.error.message).toMatch(/^9980 rejections like this one \(PROTOCOL_INVALID_JSON\).*junk 9999$/)
    expect(summary.sample).toBe('{"junk":9999')
    expect(total(notices)).toBe(10_000)
    expect(notices.length).toBeLessThanOrEqual(burst + maxSummaries)

    // A new window: reported one by one again.
    expect(report('flood.v1.agents.x.steer', 'x', junk(-1))).toBe(true)
    await delivered()
    expect(notices).toHaveLength(burst + 2)
    await bus.close()
  })

  it('many kinds of junk: one summary per (subject, code), the rest in one "various kinds" summary', async () => {
    const { bus, clock, notices, report } = setup()
    const { burst, windowMs, maxSummaries } = DEFAULT_REJECTION_LIMITS
    // An attacker varying the subject (one per agent id) cannot multiply the notices.
    for (let i = 0; i < 5_000; i++) report(`flood.v1.agents.a${i % 100}.steer`, 'x', junk(i))
    clock.advance(windowMs)
    await delivered()
    expect(notices.length).toBe(burst + maxSummaries)
    expect(total(notices)).toBe(5_000)
    const mixed = notices.at(-1) as RejectionMessage
    expect(mixed.error.message).toMatch(/rejections of various kinds/)
    await bus.close()
  })

  it('a window that never overflows publishes no summary', async () => {
    const { bus, clock, notices, report } = setup()
    for (let i = 0; i < 5; i++) report('flood.v1.agents.x.steer', 'x', junk(i))
    clock.advance(DEFAULT_REJECTION_LIMITS.windowMs * 3)
    await delivered()
    expect(notices).toHaveLength(5)
    expect(total(notices)).toBe(5)
    await bus.close()
  })
})
