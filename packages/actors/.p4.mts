import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { connectNatsBus } from '@signalbox/actors/nats'
import { startNatsServer } from '../../test/support/nats-server.ts'

let dupRounds = 0
for (let round = 0; round < 30; round++) {
  const server = await startNatsServer()
  const bus = await connectNatsBus({ servers: server.url, prefix: 'p.v1', reconnectTimeWaitMs: 100 })
  const subj = 'p.v1.audit.a.entry'
  const seen = new Map<string, number>()
  const statuses: string[] = []
  bus.onStatus((s) => statuses.push(s.type))
  await bus.durableConsume(
    subj,
    (m) => {
      const id = m.headers?.['Nats-Msg-Id'] ?? '?'
      seen.set(id, (seen.get(id) ?? 0) + 1)
      m.ack()
    },
    { durableName: 'auditor', ackWaitMs: 2000 },
  ).ready
  await Promise.all(Array.from({ length: 10 }, (_, i) => bus.durablePublish(subj, 'x', { msgId: `m${i}` })))
  while (seen.size < 10) await new Promise((r) => setTimeout(r, 5))
  const inflight = Promise.all(Array.from({ length: 10 }, (_, i) => bus.durablePublish(subj, 'x', { msgId: `m${10 + i}` })))
  await server.stop()
  while (!statuses.includes('disconnect')) await new Promise((r) => setTimeout(r, 5))
  const admin = { seenAtStop: seen.size }
  await new Promise((r) => setTimeout(r, 300))
  await server.restart()
  await inflight
  const t = Date.now()
  while (seen.size < 20 && Date.now() - t < 5000) await new Promise((r) => setTimeout(r, 5))
  await new Promise((r) => setTimeout(r, 300))
  const dups = [...seen.entries()].filter(([, c]) => c > 1)
  if (dups.length) {
    dupRounds++
    const nc = await connect({ servers: server.url })
    const jsm = await jetstreamManager(nc)
    const ci = await jsm.consumers.info(bus.streamName, 'auditor')
    console.log(
      'round',
      round,
      'dups',
      dups.length,
      admin,
      'ci',
      ci.created,
      ci.delivered,
      ci.ack_floor,
      ci.config.deliver_policy,
    )
    await nc.close()
  }
  await bus.close()
  await server.dispose()
}
console.log('dupRounds', dupRounds)
