/**
 * The directory: who serves which agent. On NATS, a KV bucket with watch; in one process, a map.
 */
import { randomBytes } from 'node:crypto'
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import type { NatsBus } from '@signalbox/actors/nats'
import {
  createAgentSystem,
  type Directory,
  type DirectoryChange,
  type DirectoryEntry,
  KvDirectory,
  MemoryDirectory,
} from '@signalbox/actors/system'
import { describe, expect, it, onTestFinished } from 'vitest'
import { NATS_URL } from '../../../../test/support/env.ts'
import { deploy, nats } from '../actors/harness.ts'
import { agent, eventually } from './harness.ts'

const entry = (agentId: string, hostId: string, refreshedAt = 1_764_446_520_000): DirectoryEntry => ({
  agentId,
  hostId,
  tools: ['find_trains', 'book_ticket'],
  pid: 4711,
  hostname: 'stockroom-1',
  startedAt: 1_764_442_800_000,
  refreshedAt,
})

async function kvDirectories(): Promise<{ host: KvDirectory; observer: KvDirectory; hostBus: NatsBus }> {
  const deployment = await deploy(nats)
  const bucket = `sbx_dir_${randomBytes(5).toString('hex')}`
  const hostBus = (await deployment.bus('host')) as NatsBus
  const observerBus = (await deployment.bus('observer')) as NatsBus
  onTestFinished(async () => {
    const admin = await connect({ servers: NATS_URL, name: `cleanup-${bucket}` })
    try {
      await (await jetstreamManager(admin)).streams.delete(`KV_${bucket}`).catch(() => {})
    } finally {
      await admin.close()
    }
  })
  return {
    host: new KvDirectory(hostBus.connection, { bucket }),
    observer: new KvDirectory(observerBus.connection, { bucket }),
    hostBus,
  }
}

async function contract(host: Directory, observer: Directory) {
  const changes: DirectoryChange[] = []
  const stop = new AbortController()
  await host.announce(entry('trains', 'host-a'))
  await observer.watch((change) => changes.push(change), stop.signal)
  // What was there before watching is reported first.
  await eventually(() => changes.length === 1, 3_000, 'the existing entry')
  expect(changes[0]).toEqual({ op: 'put', entry: entry('trains', 'host-a') })

  // A host name with dots and a colon still makes one key, and comes back whole.
  await host.announce(entry('hotel', 'box.example.org:4712'))
  await eventually(() => changes.length === 2, 3_000, 'the new entry')
  expect(changes[1]).toEqual({ op: 'put', entry: entry('hotel', 'box.example.org:4712') })
  expect((await observer.list()).map((e) => `${e.agentId}@${e.hostId}`).sort()).toEqual([
    'hotel@box.example.org:4712',
    'trains@host-a',
  ])

  // A refresh replaces the entry.
  await host.announce(entry('trains', 'host-a', 1_764_446_580_000))
  await eventually(() => changes.length === 3, 3_000, 'the refresh')
  expect((await observer.list()).find((e) => e.agentId === 'trains')?.refreshedAt).toBe(1_764_446_580_000)

  await host.withdraw('trains', 'host-a')
  await eventually(() => changes.length === 4, 3_000, 'the withdrawal')
  expect(changes[3]).toMatchObject({ op: 'delete', agentId: 'trains', hostId: 'host-a' })
  expect((await observer.list()).map((e) => e.agentId)).toEqual(['hotel'])

  // Stopped watching: nothing more arrives.
  stop.abort()
  await host.announce(entry('claw', 'host-a'))
  await new Promise((resolve) => setTimeout(resolve, 150))
  expect(changes).toHaveLength(4)
}

describe('KvDirectory (NATS KV)', () => {
  it('announce, list, watch and withdraw, seen from another connection', async () => {
    const { host, observer } = await kvDirectories()
    await contract(host, observer)
  })

  it('an agent system announces what it serves, with its tools, and withdraws it on close', async () => {
    const { host, observer, hostBus } = await kvDirectories()
    // No `subjects`: the system takes the prefix from the NATS bus.
    const system = createAgentSystem({ bus: hostBus, hostId: 'hotel-host-1', directory: host })
    const hotel = agent({ id: 'hotel', script: [] })
    system.add(hotel.agent)
    await system.serve()
    await eventually(async () => (await observer.list()).length === 1, 3_000, 'the announcement')
    expect((await observer.list())[0]).toMatchObject({ agentId: 'hotel', hostId: 'hotel-host-1', tools: [], pid: process.pid })
    await system.close()
    await eventually(async () => (await observer.list()).length === 0, 3_000, 'the withdrawal')
  })
})

describe('MemoryDirectory', () => {
  it('keeps the same contract in one process', async () => {
    const directory = new MemoryDirectory()
    await contract(directory, directory)
  })
})
