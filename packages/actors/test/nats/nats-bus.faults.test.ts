/**
 * What the durable path is for: a server restart (same port, same store dir) while consumers are
 * active and publishes are in flight. Plain publishes made during the outage are silently lost
 * (nats.js drops its outbound buffer at every dial attempt); durable ones all land, exactly once.
 * Each test runs its own nats-server, never the shared one.
 */

import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { AbortedError } from '@signalbox/core'
import { type BusStatus, createSubjects } from '@signalbox/core/bus'
import { afterEach, describe, expect, it } from 'vitest'
import { uniquePrefix } from '../../../../test/support/env.ts'
import { startNatsServer } from '../../../../test/support/nats-server.ts'
import { eventually, sleep } from './helpers.ts'

const teardown: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step()
})

async function setup() {
  const server = await startNatsServer()
  teardown.push(() => server.dispose())
  const prefix = uniquePrefix()
  const bus = await connectNatsBus({ servers: server.url, prefix, name: 'faults', reconnectTimeWaitMs: 100 })
  teardown.push(() => bus.close())
  const statuses: BusStatus['type'][] = []
  bus.onStatus((status) => statuses.push(status.type))
  return { server, bus, subjects: createSubjects(prefix), statuses }
}

async function waitForStatus(statuses: string[], type: string, timeoutMs = 5_000): Promise<void> {
  await eventually(() => statuses.includes(type), `status "${type}"`, timeoutMs)
}

function publishAll(bus: NatsBus, subject: string, ids: string[]): Promise<{ seq: number; duplicate: boolean }[]> {
  return Promise.all(ids.map((id) => bus.durablePublish(subject, `entry ${id}`, { msgId: id })))
}

const ids = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `m${from + i}`)

describe('NatsBus across a server restart', () => {
  it('delivers every durable message exactly once; plain publishes during the outage are lost', { timeout: 15_000 }, async () => {
    const { server, bus, subjects, statuses } = await setup()
    const durableSubject = subjects.audit('agent-1', 'entry')
    const plainSubject = subjects.events('agent-1', 'tick')

    const deliveries = new Map<string, number>()
    const consumer = bus.durableConsume(
      durableSubject,
      (message) => {
        const id = message.headers?.['Nats-Msg-Id'] ?? '?'
        deliveries.set(id, (deliveries.get(id) ?? 0) + 1)
        message.ack()
      },
      { durableName: 'auditor', ackWaitMs: 2_000 },
    )
    const plain: string[] = []
    await Promise.all([consumer.ready, bus.subscribe(plainSubject, (m) => void plain.push(m.text())).ready])

    // Before: everything flows.
    await publishAll(bus, durableSubject, ids(0, 10))
    bus.publish(plainSubject, 'before')
    await eventually(() => deliveries.size === 10 && plain.includes('before'), 'first batch')

    // In flight when the server goes down...
    const inFlight = publishAll(bus, durableSubject, ids(10, 20))
    await server.stop()
    await waitForStatus(statuses, 'disconnect')
    // ...and made during the outage.
    bus.publish(plainSubject, 'during') // accepted by the client, never delivered
    const duringOutage = publishAll(bus, durableSubject, ids(20, 30))
    await sleep(300)
    await server.restart()
    await waitForStatus(statuses, 'reconnect')

    const acks = [...(await inFlight), ...(await duringOutage)]
    expect(acks).toHaveLength(20)
    bus.publish(plainSubject, 'after')
    await eventually(() => deliveries.size === 30 && plain.includes('after'), 'every durable message after the restart', 8_000)
    await sleep(300) // room for a duplicate to show up

    expect([...deliveries.keys()].sort()).toEqual(ids(0, 30).sort())
    expect([...deliveries.values()].every((count) => count === 1)).toBe(true)
    // One stream entry per msgId: retried publishes were de-duplicated, not stored twice.
    expect(new Set(acks.map((a) => a.seq)).size).toBe(20)
    expect(plain).toEqual(['before', 'after'])
    expect(statuses.indexOf('disconnect')).toBeLessThan(statuses.lastIndexOf('reconnect'))
  })

  it('a private consumer keeps receiving after the restart, including what was published during it', {
    timeout: 15_000,
  }, async () => {
    const { server, bus, subjects, statuses } = await setup()
    const subject = subjects.approvalDecisions('agent-2')
    const got: string[] = []
    await bus.durableConsume(subject, (m) => {
      got.push(m.text())
      m.ack()
    }).ready
    await bus.durablePublish(subject, 'd1', { msgId: 'd1' })
    await eventually(() => got.length === 1, 'd1')

    await server.stop()
    await waitForStatus(statuses, 'disconnect')
    const during = bus.durablePublish(subject, 'd2', { msgId: 'd2' })
    await server.restart()
    await during
    await bus.durablePublish(subject, 'd3', { msgId: 'd3' })
    await eventually(() => got.length >= 3, 'd2 and d3', 8_000)
    await sleep(200)
    expect(got).toEqual(['d1', 'd2', 'd3'])
  })

  it('a durable publish waits out the outage, and stops waiting when aborted', { timeout: 15_000 }, async () => {
    const { server, bus, subjects, statuses } = await setup()
    const subject = subjects.steer('agent-3')
    await server.stop()
    await waitForStatus(statuses, 'disconnect')

    const controller = new AbortController()
    const abandoned = bus.durablePublish(subject, 'never mind', { msgId: 'x1', signal: controller.signal })
    setTimeout(() => controller.abort(), 200)
    await expect(abandoned).rejects.toBeInstanceOf(AbortedError)

    let settled = false
    const waiting = bus.durablePublish(subject, 'turn left', { msgId: 'x2' }).finally(() => {
      settled = true
    })
    await sleep(500)
    expect(settled).toBe(false) // still retrying, not failed
    await server.restart()
    const ack = await waiting
    expect(ack.duplicate).toBe(false)
    expect(ack.seq).toBeGreaterThan(0)
  })
})
