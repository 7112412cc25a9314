import { expect, it } from 'vitest'
import type { DurableMessage } from '../../../bus/bus.ts'
import { eventually, type OpenBus, sleep } from './harness.ts'

/** The `Bus` contract on durable publish: de-duplication by message id. */
export function durablePublishTests(open: OpenBus): void {
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
}
