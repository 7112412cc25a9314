import { appendFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { startCrashChild } from '../../../../test/support/crash-harness.ts'
import { CheckpointError, FileRunStore, runKey } from '../../src/store/index.ts'
import { describeRunStoreConformance, errorOf, expectStoreError } from './conformance.ts'
import { type ClaimResult, race } from './racers.ts'
import { sampleCheckpoint } from './sample.ts'

const RACE_CHILD = 'packages/core/test/store/fixtures/store-race-child.ts'
const signal = () => new AbortController().signal
const dirs: string[] = []

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-runs-'))
  dirs.push(dir)
  return dir
}

afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

describeRunStoreConformance('file', async ({ clock }) => {
  const directory = await tempDir()
  return { store: new FileRunStore({ directory, clock }), cleanup: async () => {} }
})

describeRunStoreConformance('file (fsync: false)', async ({ clock }) => {
  const directory = await tempDir()
  return { store: new FileRunStore({ directory, clock, fsync: false }), cleanup: async () => {} }
})

/** The directory holding a run's files, and its current checkpoint file. */
async function checkpointFile(directory: string, runId: string): Promise<string> {
  const dir = path.join(directory, runKey(runId))
  const revisions = (await readdir(dir)).filter((name) => name.startsWith('rev-'))
  revisions.sort((a, b) => Number(a.slice(4, -5)) - Number(b.slice(4, -5)))
  return path.join(dir, revisions.at(-1) as string)
}

describe('FileRunStore on disk', () => {
  it('reports a truncated checkpoint naming the run, and still lists the other runs', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    await store.create(sampleCheckpoint({ runId: 'run_good' }), { signal: signal() })
    await store.create(sampleCheckpoint({ runId: 'run_cut' }), { signal: signal() })
    const file = await checkpointFile(directory, 'run_cut')
    const text = await readFile(file, 'utf8')
    await writeFile(file, text.slice(0, text.length - 40))

    const error = await errorOf(store.load('run_cut', { signal: signal() }))
    expect(error).toBeInstanceOf(CheckpointError)
    expect((error as CheckpointError).code).toBe('CHECKPOINT_TRUNCATED')
    expect((error as CheckpointError).runId).toBe('run_cut')
    expect((error as Error).message).toMatch(/^Run "run_cut": the stored checkpoint is truncated/)

    const listing = await store.list({ signal: signal() })
    expect(listing.runs.map((run) => run.checkpoint.runId)).toEqual(['run_good'])
    expect(listing.errors.map((e) => [e.runId, e.code])).toEqual([['run_cut', 'CHECKPOINT_TRUNCATED']])
  })

  it('reports garbage and an unknown schema version naming the run', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    await store.create(sampleCheckpoint({ runId: 'run_junk' }), { signal: signal() })
    await store.create(sampleCheckpoint({ runId: 'run_future' }), { signal: signal() })
    await store.create(sampleCheckpoint({ runId: 'run_fine' }), { signal: signal() })
    await writeFile(await checkpointFile(directory, 'run_junk'), 'not json at all')
    const future = await checkpointFile(directory, 'run_future')
    await writeFile(future, JSON.stringify({ ...JSON.parse(await readFile(future, 'utf8')), v: 7 }))

    const listing = await store.list({ signal: signal() })
    expect(listing.runs.map((run) => run.checkpoint.runId)).toEqual(['run_fine'])
    const byRun = Object.fromEntries(listing.errors.map((e) => [e.runId, e]))
    expect(byRun.run_junk?.code).toBe('CHECKPOINT_INVALID_JSON')
    expect(byRun.run_future?.code).toBe('CHECKPOINT_UNSUPPORTED_VERSION')
    expect(byRun.run_future?.message).toContain('Run "run_future": checkpoint schema version 7 is not supported')
  })

  it('keeps two revisions readable, empties older ones without reusing their names, leaves no temp files', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    let revision = await store.create(sampleCheckpoint({ runId: 'run_gc' }), { signal: signal() })
    for (let i = 0; i < 5; i++) revision = await store.save(sampleCheckpoint({ runId: 'run_gc' }), { revision, signal: signal() })
    const dir = path.join(directory, 'run_gc')
    const sizes = Object.fromEntries(
      await Promise.all((await readdir(dir)).map(async (name) => [name, (await stat(path.join(dir, name))).size] as const)),
    )
    expect(Object.keys(sizes).sort()).toEqual([
      'rev-1.json',
      'rev-2.json',
      'rev-3.json',
      'rev-4.json',
      'rev-5.json',
      'rev-6.json',
    ])
    expect([1, 2, 3, 4].map((n) => sizes[`rev-${n}.json`])).toEqual([0, 0, 0, 0])
    expect(sizes['rev-5.json']).toBeGreaterThan(0)
    // A writer still holding revision 2 cannot publish over the emptied history.
    expectStoreError(
      await errorOf(store.save(sampleCheckpoint({ runId: 'run_gc' }), { revision: 2, signal: signal() })),
      'RUN_REVISION_CONFLICT',
      'run_gc',
    )
    expect((await store.load('run_gc', { signal: signal() }))?.revision).toBe(6)
  })

  it('refuses a revision from a deleted incarnation of the run', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    let revision = await store.create(sampleCheckpoint({ runId: 'run_again' }), { signal: signal() })
    for (let i = 0; i < 3; i++)
      revision = await store.save(sampleCheckpoint({ runId: 'run_again' }), { revision, signal: signal() })
    await store.delete('run_again', { signal: signal() })
    await store.create(sampleCheckpoint({ runId: 'run_again', status: 'running' }), { signal: signal() })
    expectStoreError(
      await errorOf(store.save(sampleCheckpoint({ runId: 'run_again' }), { revision, signal: signal() })),
      'RUN_REVISION_CONFLICT',
      'run_again',
    )
    expect(await store.load('run_again', { signal: signal() })).toMatchObject({ revision: 1, checkpoint: { status: 'running' } })
  })

  it('skips a torn last line of the message log and appends after it on a line of its own', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    await store.create(sampleCheckpoint({ runId: 'run_torn' }), { signal: signal() })
    await store.appendMessages('run_torn', { from: 0, epoch: 1, messages: [{ role: 'user', content: 'hi' }], signal: signal() })
    // The process died in the middle of writing the next batch.
    await appendFile(path.join(directory, 'run_torn', 'messages.jsonl'), '{"from":1,"epoch":1,"messages":[{"role":"assis')
    const resumed = new FileRunStore({ directory })
    expect(await resumed.readMessages('run_torn', { length: 1, signal: signal() })).toEqual([{ role: 'user', content: 'hi' }])
    await resumed.appendMessages('run_torn', {
      from: 1,
      epoch: 2,
      messages: [{ role: 'assistant', content: 'again' }],
      signal: signal(),
    })
    expect(await resumed.readMessages('run_torn', { length: 2, signal: signal() })).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'again' },
    ])
  })

  it('reports a message-log entry that parses but is not a batch, naming the run', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    await store.create(sampleCheckpoint({ runId: 'run_badlog' }), { signal: signal() })
    await writeFile(path.join(directory, 'run_badlog', 'messages.jsonl'), '{"from":0,"epoch":1,"messages":[{"role":"wizard"}]}\n')
    const error = await errorOf(store.readMessages('run_badlog', { length: 1, signal: signal() }))
    expect((error as CheckpointError).code).toBe('CHECKPOINT_INVALID')
    expect((error as CheckpointError).runId).toBe('run_badlog')
  })
})

describe('FileRunStore across processes', () => {
  it('of four processes claiming the same orphaned run, exactly one wins', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    await store.create(sampleCheckpoint({ runId: 'run_orphan', lease: { owner: 'dead', epoch: 1, expiresAt: 0 } }), {
      signal: signal(),
    })
    const results = await race<ClaimResult>(
      RACE_CHILD,
      ['p1', 'p2', 'p3', 'p4'].map((owner) => [directory, 'run_orphan', 'claim', owner]),
    )
    const winners = results.filter((result) => result.won)
    expect(winners).toHaveLength(1)
    for (const loser of results.filter((result) => !result.won))
      expect(['RUN_REVISION_CONFLICT', 'RUN_LEASE_HELD']).toContain(loser.code)
    const stored = await store.load('run_orphan', { signal: signal() })
    expect(stored?.checkpoint.lease).toMatchObject({ owner: winners[0]?.owner, epoch: 2 })
  })

  it('two processes doing load + compare-and-set increments lose no update', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    const base = sampleCheckpoint({ runId: 'run_count' })
    await store.create({ ...base, usage: { ...base.usage, totalTokens: 0 } }, { signal: signal() })
    await race(RACE_CHILD, [
      [directory, 'run_count', 'count', '40'],
      [directory, 'run_count', 'count', '40'],
    ])
    const stored = await store.load('run_count', { signal: signal() })
    expect(stored?.checkpoint.usage.totalTokens).toBe(80)
    expect(stored?.revision).toBe(81)
    expectStoreError(await errorOf(store.save(base, { revision: 40, signal: signal() })), 'RUN_REVISION_CONFLICT', 'run_count')
  })

  it.each(['fsync', 'no-fsync'])(
    'a writer (%s) killed with SIGKILL mid-stream leaves its last acknowledged checkpoint and transcript readable',
    async (mode) => {
      const directory = await tempDir()
      const writer = await startCrashChild('packages/core/test/store/fixtures/store-writer-child.ts', {
        args: [directory, 'run_killed', mode],
        ready: 'ready',
      })
      await writer.waitForLine('saved 25')
      expect(await writer.kill()).toMatchObject({ signal: 'SIGKILL' })
      const acknowledged = Math.max(...[...writer.stdout().matchAll(/^saved (\d+)$/gm)].map((match) => Number(match[1])))

      const store = new FileRunStore({ directory })
      const stored = await store.load('run_killed', { signal: signal() })
      const length = stored?.checkpoint.transcript.length ?? -1
      // Everything acknowledged survived; at most the one write in flight got further.
      expect(length).toBeGreaterThanOrEqual(acknowledged)
      expect(length).toBeLessThanOrEqual(acknowledged + 1)
      expect(stored?.checkpoint.usage.totalTokens).toBe(length)
      const messages = await store.readMessages('run_killed', { length, signal: signal() })
      expect(messages.map((message) => message.content)).toEqual(Array.from({ length }, (_, i) => `m${i + 1}`))
      // The resumed owner goes on from there.
      await store.claim('run_killed', { owner: 'next-host', leaseMs: 1_000, signal: signal() })
      await store.appendMessages('run_killed', {
        from: length,
        epoch: 2,
        messages: [{ role: 'user', content: 'after' }],
        signal: signal(),
      })
      expect((await store.readMessages('run_killed', { length: length + 1, signal: signal() })).at(-1)).toEqual({
        role: 'user',
        content: 'after',
      })
    },
  )
})
