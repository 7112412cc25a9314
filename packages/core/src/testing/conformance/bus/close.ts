import { expect, it } from 'vitest'
import { BusClosedError } from '../../../bus/errors.ts'
import { type OpenBus, rejectionOf, sleep, thrownBy } from './harness.ts'

/** The `Bus` contract on close(): idempotent, then every operation fails with BusClosedError. */
export function closeTests(open: OpenBus): void {
  it('is idempotent; afterwards every operation fails with BusClosedError', async () => {
    const { bus, subjects, agent } = await open()
    await Promise.all([bus.close(), bus.close()])
    await bus.close()
    const subject = subjects.events(agent, 'x')
    expect(thrownBy(() => bus.publish(subject, 'x'))).toBeInstanceOf(BusClosedError)
    expect(thrownBy(() => bus.subscribe(subject, () => {}))).toBeInstanceOf(BusClosedError)
    expect(await rejectionOf(bus.request(subjects.control(agent), 'x', { timeoutMs: 100 }))).toBeInstanceOf(BusClosedError)
    expect(await rejectionOf(bus.durablePublish(subjects.audit(agent, 'x'), 'x', { msgId: 'c1' }))).toBeInstanceOf(BusClosedError)
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
}
