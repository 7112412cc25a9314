/**
 * A durable consumer whose replicas lose their quorum, on a real 3-node JetStream cluster. The
 * client stays connected (its node lives), so nothing but the lost pull tells it to set up again.
 * The NATS client alone would ask for the consumer's info, and on a failure (no leader yet) sleep
 * 5 to 15 s before pulling again: an approval decided in that window waited for it. The bus sets
 * the consumer up again at its own pace and says so while it cannot.
 */

import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { SignalboxError } from '@signalbox/core'
import type { BusStatus, DurableMessage } from '@signalbox/core/bus'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { uniquePrefix } from '../support/env.ts'
import { eventually } from '../support/eventually.ts'
import { type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts'

describe('a durable consumer on a 3-node JetStream cluster', () => {
  let cluster: NatsCluster
  beforeAll(async () => {
    cluster = await startNatsCluster()
  }, 60_000)
  afterAll(async () => {
    await cluster?.dispose()
  })

  it('two of three nodes die and one comes back: the consumer says it is retrying, then delivers within seconds', async () => {
    const prefix = uniquePrefix()
    const buses: NatsBus[] = []
    onTestFinished(async () => {
      await Promise.allSettled(buses.map((bus) => bus.close()))
    })
    const open = async (name: string, servers: string[]) => {
      const bus = await connectNatsBus({
        servers,
        prefix,
        name: `${name}-${prefix}`,
        durable: { replicas: 3 },
        reconnectTimeWaitMs: 100,
        publishAttemptTimeoutMs: 1_000,
        drainTimeoutMs: 500,
        pingIntervalMs: 1_000,
      })
      buses.push(bus)
      return bus
    }
    const consumerBus = await open('consumer', cluster.urls)
    const statuses: BusStatus[] = []
    consumerBus.onStatus((status) => statuses.push(status))
    const received: { data: string; at: number }[] = []
    const subject = `${prefix}.approvals.decisions.payer`
    const subscription = consumerBus.durableConsume(
      subject,
      (message: DurableMessage) => {
        received.push({ data: new TextDecoder().decode(message.data), at: Date.now() })
        message.ack()
      },
      { purpose: 'decisions' },
    )
    onTestFinished(() => subscription.unsubscribe())
    await subscription.ready

    // The client's node lives; the other two (among them the consumer's leader) die.
    const survivor = cluster.node(consumerBus.connection.info?.server_name as string)
    const others = cluster.nodes.filter((node) => node.name !== survivor.name)
    const publisher = await open('publisher', [survivor.url])
    await Promise.all(others.map((node) => node.kill()))

    const failures = () =>
      statuses.filter((status) => status.type === 'error' && SignalboxError.is(status.error, 'BUS_CONSUMER_FAILED'))
    await eventually(() => failures().length > 0, 30_000, 'the bus to report the consumer failing while it has no leader')
    expect(consumerBus.connection.isClosed()).toBe(false)
    expect(consumerBus.connection.info?.server_name).toBe(survivor.name)

    // One node back: a quorum, a leader for the stream and every consumer.
    await others[0]?.restart()
    const manager = await publisher.manager()
    await eventually(
      async () => {
        const consumers = []
        for await (const consumer of manager.consumers.list(publisher.streamName)) consumers.push(consumer)
        return consumers.length > 0 && consumers.every((consumer) => consumer.cluster?.leader !== undefined)
      },
      60_000,
      'a leader for every consumer',
    )
    await publisher.durablePublish(subject, 'approved', { msgId: 'decision-1' })
    const publishedAt = Date.now()
    const first = await eventually(() => received[0], 30_000, 'the decision to be delivered')
    // The bus retries at most 2 s apart, but an attempt sent just before the election waits out
    // its 5 s API timeout (slower on a loaded machine); the client alone sleeps 5 to 15 s after
    // each failed attempt.
    expect(first.at - publishedAt).toBeLessThan(12_000)
    expect(received.map((message) => message.data)).toEqual(['approved'])
    await others[1]?.restart()
  }, 150_000)
})
