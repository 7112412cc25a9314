import { expect, it } from 'vitest'
import { eventually, type OpenBus, sleep } from './harness.ts'

/** The `Bus` contract on durable consumers: start position, shared durable names, acknowledgement, redelivery, unsubscribe. */
export function durableConsumerTests(open: OpenBus): void {
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
}
