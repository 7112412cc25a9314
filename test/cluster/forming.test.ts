/**
 * A deployment started together with its cluster: `signalbox host --replicas 3` comes up while
 * only two of the three nodes have joined, when JetStream answers "no suitable peers for
 * placement". The host says it waits and starts hosting once the third node joins, with its stream
 * in three copies; it used to exit with BUS_DURABLE_SETUP_FAILED.
 */
import path from 'node:path'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cleanupAll, ROOT, startProcess } from '../cli/support.ts'
import { type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts'

let cluster: NatsCluster
const buses: NatsBus[] = []

beforeAll(async () => {
  cluster = await startNatsCluster({ running: 2 })
}, 60_000)
afterAll(async () => {
  await cleanupAll()
  for (const bus of buses) await bus.close()
  await cluster?.dispose()
})

describe('a cluster still forming', () => {
  it('signalbox host --replicas 3 waits for the third node, then hosts with its stream in three copies', async () => {
    const prefix = 'forming.v1'
    const host = startProcess([
      'host',
      path.join(ROOT, 'test/cluster/fixtures/worker-module.ts'),
      '--scripted',
      ...['--nats', cluster.urls.join(','), '--prefix', prefix],
      ...['--host-id', 'host-1', '--run-bucket', 'forming_runs', '--replicas', '3'],
    ])
    await host.waitFor('the cluster cannot place its replicas until its nodes have joined', 60_000)
    expect(host.output).not.toContain('hosting')
    await cluster.nodes[2]?.restart()
    await host.waitFor(/hosting 1 agent/, 60_000)
    const bus = await connectNatsBus({ servers: cluster.urls, prefix, name: 'observer', durable: { access: 'check' } })
    buses.push(bus)
    const reply = await bus.connection.request(`$JS.API.STREAM.INFO.${bus.streamName}`, '', { timeout: 10_000 })
    expect((reply.json() as { config?: { num_replicas: number } }).config?.num_replicas).toBe(3)
    expect(host.output).not.toMatch(/error \[/)
  }, 120_000)
})
