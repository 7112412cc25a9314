/**
 * Run trees at scale on a real 3-node cluster (R3 stream and run bucket): 200 parents here, each
 * delegating to a child agent served by three `signalbox host` processes sharing a KV run store;
 * each child waits for a person's approval. Half-way, one host is SIGKILLed and, 3 s later, the
 * node leading the run bucket's stream. Every parent finishes, every child's side effect happens
 * exactly once, every approval is applied once, and the killed host's runs are taken over within
 * their lease plus 10 s. The lease (10 s) is longer than an election (6-10 s measured on
 * nats-server 2.9): a live host's runs keep theirs through it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type NatsCluster, startNatsCluster } from '../support/nats-cluster.ts'
import { runTreeScenario } from './tree-scenario.ts'

let cluster: NatsCluster
beforeAll(async () => {
  cluster = await startNatsCluster()
}, 60_000)
afterAll(async () => {
  await cluster?.dispose()
})

describe('run trees at scale on a 3-node cluster', () => {
  it('200 parents, three hosts; a host and then the stream leader killed mid-way: all finish, every effect and approval once', async () => {
    const leaseMs = 10_000
    const result = await runTreeScenario({
      cluster,
      parents: 200,
      faults: true,
      leaseMs,
      deadlineMs: 60_000,
      ...(process.env.TREE_LOG ? { log: (line) => console.log(line), outputDir: process.env.TREE_LOG } : {}),
    })
    const context = `${result.failures.slice(0, 10).join('\n')}\n${result.hostOutput}`
    expect(result.failures, context).toEqual([])
    expect(result.finished).toBe(200)
    // Each task's change ran once: none lost with the host, none run again by the host that took over.
    expect(result.effects.size).toBe(200)
    expect([...result.effects].filter(([, count]) => count !== 1)).toEqual([])
    expect(result.granted).toBe(200)
    expect(result.decisions).toBe(200)
    // The killed host had runs waiting for their approval; another host took over every one of them in time.
    expect(result.orphaned).toBeGreaterThan(0)
    expect(result.claimed).toBe(result.orphaned)
    // One owner per claim, on an R3 bucket of nats-server 2.9.10 too (the run store's claim keys).
    expect(result.doubleClaims).toBe(0)
    expect(Math.max(...result.takeoverMs)).toBeLessThan(leaseMs + 10_000)
  }, 150_000)
})
