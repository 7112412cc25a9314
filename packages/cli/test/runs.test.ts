/**
 * `signalbox runs` reads a real run store (a directory, or a KV bucket on the shared server):
 * state, owner, lease and what a run waits for; a corrupt run is reported and the others listed.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { connectNatsBus } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import { FileRunStore } from '@signalbox/core/store'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { runMain } from '../../../test/support/cli-in-process.ts'
import { NATS_URL } from '../../../test/support/env.ts'
import { cutInsideFirstCheckpoint } from '../../../test/support/run-log-files.ts'

const signal = () => AbortSignal.timeout(10_000)
const FAR = Date.now() + 3_600_000

async function tempStore(): Promise<{ directory: string; store: FileRunStore }> {
  const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-runs-cli-'))
  onTestFinished(() => rm(directory, { recursive: true, force: true }))
  return { directory, store: new FileRunStore({ directory, fsync: false }) }
}

/** A run parked on an approval (owned, lease held), one whose owner's lease ran out, one finished. */
async function fill(store: FileRunStore | KvRunStore): Promise<void> {
  await store.create(
    sampleCheckpoint({ runId: 'run_parked', lease: { owner: 'host-a', epoch: 1, expiresAt: FAR }, savedAt: 1 }),
    { signal: signal() },
  )
  await store.create(
    sampleCheckpoint({
      runId: 'run_orphan',
      agentId: 'hotel',
      status: 'running',
      pending: { approvals: [], questions: [] },
      lease: { owner: 'host-b', epoch: 2, expiresAt: 1_000 },
      savedAt: 2,
    }),
    { signal: signal() },
  )
  await store.create(
    sampleCheckpoint({ runId: 'run_done', status: 'done', pending: { approvals: [], questions: [] }, savedAt: 3 }),
    {
      signal: signal(),
    },
  )
}

describe('signalbox runs (file store)', () => {
  it('lists every stored run with state, owner, lease and what it waits for', async () => {
    const { directory, store } = await tempStore()
    await fill(store)

    const text = await runMain(['runs', '--store', directory])
    expect(text.code).toBe(0)
    const [header, ...lines] = text.stdout.split('\n').filter(Boolean)
    // A header names the columns, aligned with them.
    expect(header).toBe(`${'RUN'.padEnd('run_parked'.length)}  ${'AGENT'.padEnd('trains'.length)}  STATUS     OWNER (LEASE)`)
    expect(lines[0]).toMatch(/^run_parked\s+trains\s+waiting\s+host-a \(lease until \d\d:\d\d:\d\d\.\d{3}\)$/)
    expect(lines[0]?.indexOf('waiting')).toBe(header?.indexOf('STATUS'))
    expect(lines[0]?.indexOf('host-a')).toBe(header?.indexOf('OWNER'))
    expect(lines[1]).toMatch(/^\s+waits for approval of drop_claw \(call_1, request_1\), deadline passed$/)
    expect(lines[2]).toMatch(/^run_orphan\s+hotel\s+running\s+host-b \(lease expired\)$/)
    expect(lines[3]).toMatch(/^run_done\s+trains\s+done\s+no owner$/)
    expect(lines).toHaveLength(4)
    // In colour too: the columns line up once the colour codes are taken out.
    const coloured = await runMain(['runs', '--store', directory], { env: { NO_COLOR: undefined, FORCE_COLOR: '1' } })
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the ANSI escape
    const plain = coloured.stdout.replace(/\x1b\[[0-9;]*m/g, '')
    expect(coloured.stdout).not.toBe(plain)
    expect(plain).toBe(text.stdout)

    const json = await runMain(['runs', '--store', directory, '--json', '--status', 'waiting,running'])
    expect(json.code).toBe(0)
    const rows = json.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
    expect(rows).toMatchObject([
      {
        type: 'run',
        runId: 'run_parked',
        agentId: 'trains',
        status: 'waiting',
        owner: 'host-a',
        leaseExpired: false,
        leaseExpiresAt: FAR,
        waitingFor: [{ kind: 'approval', requestId: 'request_1', toolName: 'drop_claw', callId: 'call_1' }],
      },
      { type: 'run', runId: 'run_orphan', status: 'running', owner: 'host-b', leaseExpired: true, waitingFor: [] },
    ])

    const byAgent = await runMain(['runs', '--store', directory, '--json', '--agent', 'hotel'])
    expect(
      byAgent.stdout
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line).runId),
    ).toEqual(['run_orphan'])
  })

  it('--tree: runs as the trees delegation made, each with its host, state and what it waits for', async () => {
    const { directory, store } = await tempStore()
    const none = { approvals: [], questions: [] }
    const stored = (overrides: Parameters<typeof sampleCheckpoint>[0]) =>
      store.create(sampleCheckpoint(overrides), { signal: signal() })
    // planner (root, on host-p) › worker (waits for a person, on host-2) and worker (done); a
    // second tree; and a child whose parent is not stored (a parent without a store).
    await stored({
      runId: 'run_root',
      agentId: 'planner',
      status: 'running',
      pending: none,
      ledger: [],
      lease: { owner: 'host-p', epoch: 1, expiresAt: FAR },
      savedAt: 1,
    })
    await stored({
      runId: 'run_w1',
      agentId: 'worker',
      runPath: ['run_root'],
      lease: { owner: 'host-2', epoch: 2, expiresAt: FAR },
      savedAt: 2,
    })
    await stored({ runId: 'run_w2', agentId: 'worker', runPath: ['run_root'], status: 'done', pending: none, savedAt: 3 })
    await stored({
      runId: 'run_deep',
      agentId: 'clerk',
      runPath: ['run_root', 'run_w2'],
      status: 'done',
      pending: none,
      savedAt: 4,
    })
    await stored({
      runId: 'run_lone',
      agentId: 'worker',
      runPath: ['run_gone'],
      status: 'running',
      pending: none,
      lease: { owner: 'host-3', epoch: 1, expiresAt: 1_000 },
      savedAt: 5,
    })

    const text = await runMain(['runs', '--store', directory, '--tree'])
    expect(text.code).toBe(0)
    const lines = text.stdout.split('\n').filter(Boolean)
    expect(lines[0]).toMatch(/^planner run_root {2}running {2}host-p \(lease until [\d:.]+\)$/)
    expect(lines[1]).toBe('│  · waits for worker run_w1')
    expect(lines[2]).toMatch(/^├─ worker run_w1 {2}waiting {2}host-2 \(lease until [\d:.]+\)$/)
    expect(lines[3]).toBe('│     · waits for approval of drop_claw (call_1, request_1), deadline passed')
    expect(lines[4]).toBe('└─ worker run_w2  done  no owner')
    expect(lines[5]).toBe('   └─ clerk run_deep  done  no owner')
    expect(lines[6]).toBe('worker run_lone  running  host-3 (lease expired) · child of run_gone (not in this listing)')
    expect(lines).toHaveLength(7)

    const json = await runMain(['runs', '--store', directory, '--tree', '--json'])
    const trees = json.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
    expect(trees).toMatchObject([
      {
        type: 'tree',
        runId: 'run_root',
        children: [
          {
            runId: 'run_w1',
            owner: 'host-2',
            status: 'waiting',
            waitingFor: [{ kind: 'approval', toolName: 'drop_claw' }],
            children: [],
          },
          { runId: 'run_w2', children: [{ runId: 'run_deep', agentId: 'clerk', children: [] }] },
        ],
      },
      { type: 'tree', runId: 'run_lone', parentRunId: 'run_gone', parentStored: false, children: [] },
    ])
    // Filtered, a run whose parent is filtered out heads its own tree.
    const waiting = await runMain(['runs', '--store', directory, '--tree', '--status', 'waiting'])
    expect(waiting.stdout.split('\n').filter(Boolean)[0]).toMatch(
      /^worker run_w1 {2}waiting .* · child of run_root \(not in this listing\)$/,
    )
  })

  it('reports a corrupt run by name, lists the others, and exits 1', async () => {
    const { directory, store } = await tempStore()
    await fill(store)
    cutInsideFirstCheckpoint(directory, 'run_orphan')

    const result = await runMain(['runs', '--store', directory])
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('run_parked')
    expect(result.stdout).toContain('run_done')
    expect(result.stdout).not.toContain('run_orphan')
    expect(result.stderr).toMatch(/unreadable \[CHECKPOINT_TRUNCATED\] Run "run_orphan"/)
  })

  it('refuses a missing store, two stores, an unknown status, and --bucket without a bus', async () => {
    const missing = await runMain(['runs', '--store', path.join(os.tmpdir(), `no-such-${randomBytes(4).toString('hex')}`)])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('no such directory')
    const both = await runMain(['runs', '--store', '.', '--bucket', 'b'])
    expect(both.code).toBe(2)
    expect(both.stderr).toContain('exactly one of --store')
    const status = await runMain(['runs', '--store', '.', '--status', 'sleeping'])
    expect(status.code).toBe(2)
    expect(status.stderr).toContain('unknown status "sleeping"')
    const noBucket = await runMain(['runs', '--bucket', `no_such_${randomBytes(4).toString('hex')}`, '--nats', NATS_URL])
    expect(noBucket.code).toBe(2)
    expect(noBucket.stderr).toContain('no such KV bucket')
    const noBus = await runMain(['runs', '--bucket', 'b'], { env: {} })
    expect(noBus.code).toBe(1)
    expect(noBus.stderr).toContain('NO_BUS')
  })

  it('has help', async () => {
    const help = await runMain(['runs', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('--store <dir>')
    expect(help.stdout).toContain('--bucket <name>')
  })
})

describe('signalbox runs (NATS KV store)', () => {
  it('lists the runs of a bucket', async () => {
    const bus = await connectNatsBus({ servers: NATS_URL, name: 'runs-cli-test' })
    const bucket = `runs_cli_${randomBytes(6).toString('hex')}`
    onTestFinished(async () => {
      // The bucket is the stream KV_<bucket>: delete it through the JetStream API.
      await bus.connection.request(`$JS.API.STREAM.DELETE.KV_${bucket}`).catch(() => {})
      await bus.close()
    })
    await fill(new KvRunStore({ connection: bus.connection, bucket }))

    const result = await runMain(['runs', '--bucket', bucket, '--nats', NATS_URL, '--json'])
    expect(result.code).toBe(0)
    const rows = result.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line))
    expect(rows.map((r) => [r.runId, r.status, r.owner, r.leaseExpired])).toEqual([
      ['run_parked', 'waiting', 'host-a', false],
      ['run_orphan', 'running', 'host-b', true],
      ['run_done', 'done', undefined, undefined],
    ])
  })
})
