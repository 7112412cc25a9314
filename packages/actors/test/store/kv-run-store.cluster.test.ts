/**
 * The KV run store on a real 3-node nats-server cluster (R3 bucket), as hosts use it: each host a
 * connection to its own node, many durable runs at once. A write is readable by the next operation
 * of any host (reads go to the stream leader, never to a replica that may lag), and a leader
 * election costs a pause, never a failed run.
 */
import { randomBytes } from 'node:crypto'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { KvRunStore } from '@signalbox/actors/store'
import { type Agent, createAgent, tool } from '@signalbox/core'
import type { Checkpoint } from '@signalbox/core/store'
import { ScriptedProvider, sampleCheckpoint } from '@signalbox/core/testing'
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest'
import { z } from 'zod'
import { type NatsCluster, startNatsCluster } from '../../../../test/support/nats-cluster.ts'

let cluster: NatsCluster
const connections: NatsConnection[] = []
const signal = () => AbortSignal.timeout(60_000)

beforeAll(async () => {
  cluster = await startNatsCluster()
}, 60_000)
afterAll(async () => {
  await Promise.allSettled(connections.map((nc) => nc.close()))
  await cluster?.dispose()
})

async function connectTo(servers: string[], name: string): Promise<NatsConnection> {
  const nc = await connect({ servers, name, reconnectTimeWait: 100, maxReconnectAttempts: -1, pingInterval: 1_000 })
  connections.push(nc)
  return nc
}

/** An agent that calls `step` until it has run `steps` times, then answers "done". */
function stepper(
  id: string,
  store: KvRunStore,
  steps: number,
  onStep: (runId: string, n: number) => Promise<void> | void,
): Agent {
  const step = tool({
    name: 'step',
    description: 'One step.',
    schema: z.object({ n: z.number() }),
    execute: async ({ n }, { runId }) => {
      await onStep(runId, n)
      return `step ${n} done`
    },
  })
  return createAgent({
    id,
    hostId: id,
    store,
    tools: [step],
    maxTurns: steps + 2,
    provider: new ScriptedProvider({
      record: false,
      script: (request) => {
        const done = request.messages.filter((m) => m.role === 'tool').length
        return done >= steps ? { content: 'done' } : { toolCalls: [{ id: `c${done}`, name: 'step', arguments: { n: done + 1 } }] }
      },
    }),
  })
}

describe('KvRunStore on a 3-node cluster (R3)', () => {
  it('300 runs on three hosts at once on a fresh bucket: all finish, and every host reads every run as written', async () => {
    const bucket = `runs_${randomBytes(4).toString('hex')}`
    // One host per node, each creating the bucket as it starts (as hosts do).
    const stores = await Promise.all(
      cluster.urls.map(
        async (url, i) => new KvRunStore({ connection: await connectTo([url], `host-${i}`), bucket, replicas: 3 }),
      ),
    )
    const agents = stores.map((store, i) => stepper(`host${i}`, store, 3, () => {}))
    const runIds = agents.flatMap((_, a) => Array.from({ length: 100 }, (_, i) => `run_${a}_${i}`))
    const settled = await Promise.allSettled(runIds.map((runId) => agents[Number(runId.split('_')[1])]?.run('go', { runId })))
    const failures = settled.flatMap((outcome, i) =>
      outcome.status === 'rejected' ? [`${runIds[i]}: ${String((outcome.reason as Error)?.message ?? outcome.reason)}`] : [],
    )
    expect(failures).toEqual([])
    expect(settled.every((outcome) => outcome.status === 'fulfilled' && outcome.value?.status === 'done')).toBe(true)

    // Read back from every node: the same newest revision, the whole transcript.
    for (const runId of runIds) {
      const seen = await Promise.all(stores.map((store) => store.load(runId, { signal: signal() })))
      expect(seen.map((run) => run?.checkpoint.status)).toEqual(['done', 'done', 'done'])
      expect(new Set(seen.map((run) => run?.revision)).size).toBe(1)
    }
    const sample = runIds[150] as string
    const stored = await stores[2]?.load(sample, { signal: signal() })
    const messages = await stores[2]?.readMessages(sample, {
      length: stored?.checkpoint.transcript.length ?? 0,
      signal: signal(),
    })
    expect(messages?.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      'step 1 done',
      'step 2 done',
      'step 3 done',
    ])

    // A write on one node is what the next operation on another reads: 100 saves, each read back elsewhere.
    const run = await stores[0]?.load(sample, { signal: signal() })
    let revision = run?.revision as number
    const stale: number[] = []
    for (let i = 0; i < 100; i++) {
      const checkpoint = { ...(run?.checkpoint as Checkpoint), savedAt: i }
      revision = (await stores[i % 3]?.save(checkpoint, { revision, signal: signal() })) as number
      const next = await stores[(i + 1) % 3]?.load(sample, { signal: signal() })
      if (next?.revision !== revision) stale.push(i)
    }
    expect(stale).toEqual([])
  }, 120_000)

  it('the stream leader is killed while 60 runs write: each waits out the election, none fails, none loses a message', async () => {
    const bucket = `runs_${randomBytes(4).toString('hex')}`
    const admin = await connectTo(cluster.urls, 'admin')
    const store = new KvRunStore({ connection: await connectTo(cluster.urls, 'host'), bucket, replicas: 3 })
    // Every run stops at its third step until the leader is gone.
    let reachedThird = 0
    let release: () => void = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    let allThere: () => void = () => {}
    const there = new Promise<void>((resolve) => {
      allThere = resolve
    })
    const runs = 60
    const agent = stepper('host', store, 8, async (_runId, n) => {
      if (n !== 3) return
      if (++reachedThird === runs) allThere()
      await released
    })
    const results = Array.from({ length: runs }, (_, i) => agent.run('go', { runId: `run_${i}` }))
    await there
    const jsm = await jetstreamManager(admin)
    const leader = (await jsm.streams.info(`KV_${bucket}`)).cluster?.leader as string
    await cluster.node(leader).kill()
    // Back for the tests after this one, whatever this one finds.
    onTestFinished(() => cluster.node(leader).restart())
    // The runs go on at once: their next writes meet the election.
    release()
    const settled = await Promise.allSettled(results)
    const failures = settled.flatMap((outcome, i) =>
      outcome.status === 'rejected' ? [`run_${i}: ${String((outcome.reason as Error)?.message ?? outcome.reason)}`] : [],
    )
    expect(failures).toEqual([])
    for (let i = 0; i < runs; i++) {
      const stored = await store.load(`run_${i}`, { signal: signal() })
      expect(stored?.checkpoint.status).toBe('done')
      const messages = await store.readMessages(`run_${i}`, {
        length: stored?.checkpoint.transcript.length ?? 0,
        signal: signal(),
      })
      expect(messages.filter((m) => m.role === 'tool')).toHaveLength(8)
    }
  }, 120_000)
  it('nine hosts over three nodes claim the same expired run, 150 rounds: one owner per epoch, every round', async () => {
    const bucket = `runs_${randomBytes(4).toString('hex')}`
    // Three connections per node: racing writes reach the stream leader from every node.
    const hosts = await Promise.all(
      Array.from({ length: 9 }, async (_, i) => {
        const url = cluster.urls[i % 3] as string
        return new KvRunStore({ connection: await connectTo([url], `claimer-${i}`), bucket, replicas: 3 })
      }),
    )
    const rounds = 150
    const doubled: string[] = []
    const unclaimed: string[] = []
    for (let round = 0; round < rounds; round++) {
      const runId = `run_${round}`
      await hosts[round % 9]?.create(sampleCheckpoint({ runId, lease: { owner: 'gone', epoch: 4, expiresAt: 0 } }), {
        signal: signal(),
      })
      // Every host has read the run (and its revision) before any claims: the race is at one revision.
      await Promise.all(hosts.map((host) => host.load(runId, { signal: signal() })))
      const outcomes = await Promise.allSettled(
        hosts.map((host, i) => host.claim(runId, { owner: `host-${i}`, leaseMs: 60_000, signal: signal() })),
      )
      const owners = outcomes.flatMap((outcome, i) =>
        outcome.status === 'fulfilled' ? [{ host: `host-${i}`, ...outcome.value }] : [],
      )
      const refused = outcomes.flatMap((outcome) =>
        outcome.status === 'rejected' ? [(outcome.reason as { code?: string }).code] : [],
      )
      expect(refused.filter((code) => code !== 'RUN_REVISION_CONFLICT' && code !== 'RUN_LEASE_HELD')).toEqual([])
      if (owners.length > 1) doubled.push(`${runId}: ${owners.map((o) => `${o.host}@${o.checkpoint.lease?.epoch}`).join(', ')}`)
      if (owners.length === 0) unclaimed.push(runId)
      // The one owner is what every host now reads, and the next write by anyone else is refused.
      const stored = await hosts[(round + 4) % 9]?.load(runId, { signal: signal() })
      if (owners.length === 1) {
        expect(stored?.checkpoint.lease?.owner).toBe(owners[0]?.host)
        expect(stored?.revision).toBe(owners[0]?.revision)
      }
    }
    expect(doubled).toEqual([])
    // A round with no owner would only delay a takeover by one lease; none is expected without faults.
    expect(unclaimed).toEqual([])
  }, 180_000)
})
