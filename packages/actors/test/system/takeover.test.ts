/**
 * Host takeover: two real host processes scan the same store at once for runs whose owner's
 * lease expired; every such run is claimed by exactly one of them (the store's compare-and-set),
 * handed to that host's agent once, and the store names the winner. Runs with a live lease, of
 * agents a host does not serve, or of an agent that cannot resume are left alone.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { FileRunStore, type RunStore } from '@signalbox/core/store'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { startCrashChild } from '../../../../test/support/crash-harness.ts'
import { NATS_URL } from '../../../../test/support/env.ts'
import { connectNatsBus } from '../../src/nats/index.ts'
import { KvRunStore } from '../../src/store/index.ts'
import { RunTakeover, type TakeoverEvent } from '../../src/system/index.ts'

const FIXTURE = 'packages/actors/test/system/fixtures/takeover-host.ts'
const ORPHANS = Array.from({ length: 12 }, (_, i) => `run_orphan_${i}`)
const signal = () => AbortSignal.timeout(60_000)

/** Twelve runs of `trains` whose host died (lease expired), one still owned, one of `hotel` (no resume), one finished. */
async function fill(store: RunStore): Promise<void> {
  for (const runId of ORPHANS)
    await store.create(sampleCheckpoint({ runId, lease: { owner: 'dead-host', epoch: 3, expiresAt: 1_000 } }), {
      signal: signal(),
    })
  await store.create(
    sampleCheckpoint({ runId: 'run_owned', lease: { owner: 'live-host', epoch: 1, expiresAt: Date.now() + 600_000 } }),
    { signal: signal() },
  )
  await store.create(
    sampleCheckpoint({ runId: 'run_hotel', agentId: 'hotel', lease: { owner: 'dead-host', epoch: 1, expiresAt: 1_000 } }),
    { signal: signal() },
  )
  await store.create(sampleCheckpoint({ runId: 'run_done', status: 'done' }), { signal: signal() })
}

interface HostResult {
  claimed: string[]
  lost: string[]
  resumed: string[]
  events: string[]
}

async function race(args: (hostId: string) => string[]): Promise<[HostResult, HostResult]> {
  const hosts = await Promise.all(
    ['host-a', 'host-b'].map((hostId) => startCrashChild(FIXTURE, { args: args(hostId), ready: 'ready' })),
  )
  onTestFinished(async () => {
    for (const host of hosts) await host.kill().catch(() => {})
  })
  for (const host of hosts) host.send('go')
  const results = await Promise.all(hosts.map((host) => host.waitForLine(/^result /, 170_000)))
  return results.map((line) => JSON.parse(line.slice('result '.length)) as HostResult) as [HostResult, HostResult]
}

async function expectOneWinnerEach(store: RunStore, [a, b]: [HostResult, HostResult]): Promise<void> {
  // Every orphan claimed by exactly one host, and resumed there once.
  expect([...a.claimed, ...b.claimed].sort()).toEqual([...ORPHANS].sort())
  expect(a.claimed.filter((id) => b.claimed.includes(id))).toEqual([])
  expect([...a.resumed].sort()).toEqual([...a.claimed].sort())
  expect([...b.resumed].sort()).toEqual([...b.claimed].sort())
  // What one lost, the other won.
  for (const id of a.lost) expect(b.claimed).toContain(id)
  for (const id of b.lost) expect(a.claimed).toContain(id)
  // The store agrees: the winner holds the lease, at the next epoch.
  for (const runId of ORPHANS) {
    const run = await store.load(runId, { signal: signal() })
    const winner = a.claimed.includes(runId) ? 'host-a' : 'host-b'
    expect(run?.checkpoint.lease).toMatchObject({ owner: winner, epoch: 4 })
  }
  // Left alone: a live lease, an agent that cannot resume, a finished run.
  expect((await store.load('run_owned', { signal: signal() }))?.checkpoint.lease?.owner).toBe('live-host')
  expect((await store.load('run_hotel', { signal: signal() }))?.checkpoint.lease?.owner).toBe('dead-host')
  for (const r of [a, b]) {
    expect(r.claimed).not.toContain('run_owned')
    expect(r.events).toContain('not-resumable:run_hotel')
    expect(r.claimed).not.toContain('run_done')
  }
}

describe('host takeover of runs whose lease expired', () => {
  it('two host processes on one file store: each orphan goes to exactly one', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-takeover-'))
    onTestFinished(() => rm(directory, { recursive: true, force: true }))
    const store = new FileRunStore({ directory, fsync: false })
    await fill(store)
    const results = await race((hostId) => ['file', directory, hostId])
    await expectOneWinnerEach(store, results)
  }, 200_000)

  it('two host processes on one KV bucket: each orphan goes to exactly one', async () => {
    const bus = await connectNatsBus({ servers: NATS_URL, name: 'takeover-test' })
    const bucket = `takeover_${randomBytes(6).toString('hex')}`
    onTestFinished(async () => {
      await bus.connection.request(`$JS.API.STREAM.DELETE.KV_${bucket}`).catch(() => {})
      await bus.close()
    })
    const store = new KvRunStore({ connection: bus.connection, bucket })
    await fill(store)
    const results = await race((hostId) => ['kv', bucket, hostId, NATS_URL])
    await expectOneWinnerEach(store, results)
  }, 200_000)

  it('on start, a host takes back the runs it owned before its restart, even with a live lease', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-takeover-'))
    onTestFinished(() => rm(directory, { recursive: true, force: true }))
    const store = new FileRunStore({ directory, fsync: false })
    await store.create(
      sampleCheckpoint({ runId: 'run_mine', lease: { owner: 'host-a', epoch: 2, expiresAt: Date.now() + 600_000 } }),
      { signal: signal() },
    )
    const resumed: string[] = []
    const events: TakeoverEvent[] = []
    const takeover = new RunTakeover({
      store,
      hostId: 'host-a',
      leaseMs: 30_000,
      agents: () => [{ id: 'trains', resume: (runId: string) => resumed.push(runId) }],
      onEvent: (event) => events.push(event),
    })
    onTestFinished(() => takeover.stop())
    const first = await takeover.start()
    expect(first.claimed).toEqual(['run_mine'])
    expect(resumed).toEqual(['run_mine'])
    // A renewal by the same host: same epoch.
    expect(events).toContainEqual({ type: 'claimed', runId: 'run_mine', agentId: 'trains', from: undefined, epoch: 2 })
  })
})
