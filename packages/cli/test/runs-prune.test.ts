/**
 * `signalbox runs prune` against real stores (a directory, a KV bucket on the shared server):
 * finished runs older than the retention go, with their transcripts; younger ones, runs that may
 * still go on and (unless asked) parked runs stay; `--dry-run` deletes nothing. And `signalbox
 * runs` shows why a parked run is parked.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, readdir, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { connectNatsBus } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import { FileRunStore, type RunStore } from '@signalbox/core/store'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { runMain } from '../../../test/support/cli-in-process.ts'
import { NATS_URL } from '../../../test/support/env.ts'

const signal = () => AbortSignal.timeout(10_000)
const DAY = 86_400_000
const OLD = Date.now() - 40 * DAY
const RECENT = Date.now() - DAY

async function fill(store: RunStore): Promise<void> {
  const none = { approvals: [], questions: [] }
  const runs = [
    sampleCheckpoint({ runId: 'run_done_old', status: 'done', pending: none, savedAt: OLD }),
    sampleCheckpoint({ runId: 'run_failed_old', status: 'failed', pending: none, savedAt: OLD }),
    sampleCheckpoint({ runId: 'run_done_recent', status: 'done', pending: none, savedAt: RECENT }),
    sampleCheckpoint({ runId: 'run_waiting_old', status: 'waiting', savedAt: OLD }),
    sampleCheckpoint({
      runId: 'run_parked_old',
      status: 'parked',
      pending: none,
      parked: { code: 'RUN_TRANSCRIPT_GAP', message: 'the message log has no message 1 of the 3', by: 'host-b', at: OLD },
      savedAt: OLD,
    }),
  ]
  for (const checkpoint of runs) await store.create(checkpoint, { signal: signal() })
  await store.appendMessages('run_done_old', { from: 0, epoch: 0, messages: [{ role: 'user', content: 'hi' }], signal: signal() })
}

const ids = (stdout: string, type: string) =>
  stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((row) => row.type === type)
    .map((row) => row.runId)
    .sort()

describe('signalbox runs prune (file store)', () => {
  it('prunes finished runs older than --older-than; --dry-run deletes nothing; parked only when asked', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-prune-cli-'))
    onTestFinished(() => rm(directory, { recursive: true, force: true }))
    await fill(new FileRunStore({ directory, fsync: false }))

    const dry = await runMain(['runs', 'prune', '--store', directory, '--older-than', '30d', '--dry-run'])
    expect(dry.code).toBe(0)
    expect(dry.stdout).toMatch(/^would prune run_done_old\s+trains\s+done\s+saved \d{4}-\d\d-\d\d/m)
    expect(dry.stdout).toContain('2 runs would be pruned (last saved before')
    expect((await readdir(directory)).sort()).toHaveLength(5)

    const pruned = await runMain(['runs', 'prune', '--store', directory, '--older-than', '30d', '--json'])
    expect(pruned.code).toBe(0)
    expect(ids(pruned.stdout, 'pruned')).toEqual(['run_done_old', 'run_failed_old'])
    expect((await readdir(directory)).sort()).toEqual(['run_done_recent', 'run_parked_old', 'run_waiting_old'])

    const parked = await runMain(['runs', 'prune', '--store', directory, '--older-than', '30d', '--status', 'parked', '--json'])
    expect(ids(parked.stdout, 'pruned')).toEqual(['run_parked_old'])
    expect((await readdir(directory)).sort()).toEqual(['run_done_recent', 'run_waiting_old'])
  })

  it('refuses a missing or malformed age, and a status that may still go on', async () => {
    const none = await runMain(['runs', 'prune', '--store', '.'])
    expect(none.code).toBe(2)
    expect(none.stderr).toContain('--older-than <age> is required')
    const bad = await runMain(['runs', 'prune', '--store', '.', '--older-than', '30 days'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('use a number and a unit (ms, s, m, h, d, w)')
    const live = await runMain(['runs', 'prune', '--store', '.', '--older-than', '1d', '--status', 'done,waiting'])
    expect(live.code).toBe(2)
    expect(live.stderr).toContain('--status waiting: a run that may still be going on is never pruned')
    const help = await runMain(['runs', 'prune', '--help'])
    expect(help.code).toBe(0)
    expect(help.stdout).toContain('--older-than <age>')
    expect(help.stdout).toContain('--dry-run')
    // `runs --help` is still the listing's help.
    expect((await runMain(['runs', '--help'])).stdout).toContain('signalbox runs: list the runs a store keeps')
  })

  it('`signalbox runs` shows why a run is parked', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-parked-cli-'))
    onTestFinished(() => rm(directory, { recursive: true, force: true }))
    await fill(new FileRunStore({ directory, fsync: false }))
    const text = await runMain(['runs', '--store', directory, '--status', 'parked'])
    expect(text.code).toBe(0)
    const [header, ...lines] = text.stdout.split('\n').filter(Boolean)
    expect(header).toMatch(/^RUN\s+AGENT\s+STATUS\s+OWNER \(LEASE\)$/)
    expect(lines[0]).toMatch(/^run_parked_old\s+trains\s+parked\s+no owner$/)
    expect(lines[1]).toMatch(
      /^\s+parked by host-b at \d\d:\d\d:\d\d\.\d{3}: \[RUN_TRANSCRIPT_GAP\] the message log has no message 1 of the 3$/,
    )
    const json = await runMain(['runs', '--store', directory, '--status', 'parked', '--json'])
    expect(JSON.parse(json.stdout.trim())).toMatchObject({ runId: 'run_parked_old', parked: { code: 'RUN_TRANSCRIPT_GAP' } })
  })
})

describe('signalbox runs prune (NATS KV store)', () => {
  it('prunes a bucket the same way', async () => {
    const bus = await connectNatsBus({ servers: NATS_URL, name: 'runs-prune-cli-test' })
    const bucket = `runs_prune_${randomBytes(6).toString('hex')}`
    onTestFinished(async () => {
      await bus.connection.request(`$JS.API.STREAM.DELETE.KV_${bucket}`).catch(() => {})
      await bus.close()
    })
    const store = new KvRunStore({ connection: bus.connection, bucket })
    await fill(store)
    const result = await runMain(['runs', 'prune', '--bucket', bucket, '--nats', NATS_URL, '--older-than', '720h', '--json'])
    expect(result.code).toBe(0)
    expect(ids(result.stdout, 'pruned')).toEqual(['run_done_old', 'run_failed_old'])
    const left = await store.list({ signal: signal() })
    expect(left.runs.map((run) => run.checkpoint.runId).sort()).toEqual(['run_done_recent', 'run_parked_old', 'run_waiting_old'])
    await expect(store.readMessages('run_done_old', { length: 1, signal: signal() })).rejects.toMatchObject({
      code: 'RUN_TRANSCRIPT_GAP',
    })
  })
})
