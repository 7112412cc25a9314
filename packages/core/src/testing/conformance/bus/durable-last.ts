import { expect, it } from 'vitest'
import { AbortedError } from '../../../errors.ts'
import { type OpenBus, rejectionOf } from './harness.ts'

/** The `Bus` contract on durableLast: the newest stored message of one subject. */
export function durableLastTests(open: OpenBus): void {
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
}
