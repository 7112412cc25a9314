/**
 * The shared `Bus` conformance suite against NATS (the shared server at NATS_URL, JetStream on).
 * Each test has its own prefix, hence its own stream; an admin connection deletes it afterwards
 * (the test may have closed the bus itself).
 */
import { jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { connectNatsBus } from '@signalbox/actors/nats'
import { describeBusConformance } from '@signalbox/core/testing/conformance'
import { afterAll, beforeAll } from 'vitest'
import { NATS_URL } from '../../../../test/support/env.ts'

let admin: NatsConnection
beforeAll(async () => {
  admin = await connect({ servers: NATS_URL, name: 'conformance-admin' })
})
afterAll(async () => {
  await admin?.close()
})

describeBusConformance('nats', async ({ prefix }) => {
  const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: `conformance-${prefix}` })
  return {
    bus,
    cleanup: async () => {
      await bus.close()
      const jsm = await jetstreamManager(admin)
      await jsm.streams.delete(bus.streamName).catch(() => {})
    },
  }
})
