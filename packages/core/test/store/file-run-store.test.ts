import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { describeRunStoreConformance, errorOf, expectStoreError } from '@signalbox/core/testing/conformance'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { startCrashChild } from '../../../../test/support/crash-harness.ts'
import {
  checkpointLines,
  cutInsideFirstCheckpoint,
  rewriteLatestCheckpoint,
  runLogFile,
} from '../../../../test/support/run-log-files.ts'
import { type ClaimResult, race } from '../../../../test/support/store/racers.ts'
import { createAgent, tool } from '../../src/index.ts'
import { type Checkpoint, CheckpointError, FileRunStore } from '../../src/store/index.ts'
import { checkpointRecord } from '../../src/store/run-log.ts'
import { ScriptedProvider } from '../../src/testing/index.ts'

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
  return {
    store: new FileRunStore({ directory, clock }),
    cleanup: async () => {},
    rewriteCheckpoint: async (runId, edit) => rewriteLatestCheckpoint(directory, runId, edit),
  }
})

describeRunStoreConformance('file (fsync: false, compacting every 4 checkpoints)', async ({ clock }) => {
  const directory = await tempDir()
  return {
    store: new FileRunStore({ directory, clock, fsync: false, compactAfter: { checkpoints: 4 } }),
    cleanup: async () => {},
    rewriteCheckpoint: async (runId, edit) => rewriteLatestCheckpoint(directory, runId, edit),
  }
})

describe('FileRunStore on disk', () => {
  it('reports a log with no complete checkpoint as truncated, naming the run, and still lists the other runs', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    await store.create(sampleCheckpoint({ runId: 'run_good' }), { signal: signal() })
    await store.create(sampleCheckpoint({ runId: 'run_cut' }), { signal: signal() })
    cutInsideFirstCheckpoint(directory, 'run_cut')

    const error = await errorOf(store.load('run_cut', { signal: signal() }))
    expect(error).toBeInstanceOf(CheckpointError)
    expect((error as CheckpointError).code).toBe('CHECKPOINT_TRUNCATED')
    expect((error as CheckpointError).runId).toBe('run_cut')
    expect((error as Error).message).toMatch(/^Run "run_cut": the run log holds no complete checkpoint/)

    const listing = await store.list({ signal: signal() })
    expect(listing.runs.map((run) => run.checkpoint.runId)).toEqual(['run_good'])
    expect(listing.errors.map((e) => [e.runId, e.code])).toEqual([['run_cut', 'CHECKPOINT_TRUNCATED']])
  })

  it('reports garbage, an unknown schema version and an unknown log format naming the run', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    for (const runId of ['run_junk', 'run_future', 'run_format', 'run_fine']) {
      await store.create(sampleCheckpoint({ runId }), { signal: signal() })
    }
    rewriteLatestCheckpoint(directory, 'run_junk', () => 'not json at all')
    rewriteLatestCheckpoint(directory, 'run_future', (json) => JSON.stringify({ ...JSON.parse(json), v: 7 }))
    const format = runLogFile(directory, 'run_format')
    await writeFile(format, (await readFile(format, 'utf8')).replace('signalbox-run-log 2', 'signalbox-run-log 3'))

    // Read by another process (this store remembers what it wrote: its logs only grow).
    const listing = await new FileRunStore({ directory }).list({ signal: signal() })
    expect(listing.runs.map((run) => run.checkpoint.runId)).toEqual(['run_fine'])
    const byRun = Object.fromEntries(listing.errors.map((e) => [e.runId, e]))
    expect(byRun.run_junk?.code).toBe('CHECKPOINT_INVALID_JSON')
    expect(byRun.run_future?.code).toBe('CHECKPOINT_UNSUPPORTED_VERSION')
    expect(byRun.run_future?.message).toContain('Run "run_future": checkpoint schema version 7 is not supported')
    expect(byRun.run_future?.details).toMatchObject({ version: 7, supported: 2 })
    expect(byRun.run_format?.code).toBe('CHECKPOINT_UNSUPPORTED_VERSION')
    expect(byRun.run_format?.message).toContain('Run "run_format": the run log is in format "signalbox-run-log 3"')
  })

  it('keeps one append-only log per run, no temp files; a writer holding an old revision is fenced', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    let revision = await store.create(sampleCheckpoint({ runId: 'run_gc' }), { signal: signal() })
    for (let i = 0; i < 5; i++) revision = await store.save(sampleCheckpoint({ runId: 'run_gc' }), { revision, signal: signal() })
    expect(await readdir(path.join(directory, 'run_gc'))).toEqual(['log.1'])
    expect(checkpointLines(runLogFile(directory, 'run_gc'))).toHaveLength(6)
    expectStoreError(
      await errorOf(store.save(sampleCheckpoint({ runId: 'run_gc' }), { revision: 2, signal: signal() })),
      'RUN_REVISION_CONFLICT',
      'run_gc',
    )
    // Another process that read revision 6 before this one wrote 7 loses, and its record is never read.
    const other = new FileRunStore({ directory })
    expect((await other.load('run_gc', { signal: signal() }))?.revision).toBe(6)
    await store.save(sampleCheckpoint({ runId: 'run_gc', status: 'done' }), { revision: 6, signal: signal() })
    expectStoreError(
      await errorOf(other.save(sampleCheckpoint({ runId: 'run_gc', status: 'failed' }), { revision: 6, signal: signal() })),
      'RUN_REVISION_CONFLICT',
      'run_gc',
    )
    expect(await other.load('run_gc', { signal: signal() })).toMatchObject({ revision: 7, checkpoint: { status: 'done' } })
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

  it('skips a torn last checkpoint record: the run loads at the revision before, and writing goes on from there', async () => {
    const directory = await tempDir()
    // Without group commit: a torn record is one its writer never finished, so it never reaches a
    // commit log; this writer's log is cut by hand.
    const store = new FileRunStore({ directory, groupCommit: false })
    let revision = await store.create(sampleCheckpoint({ runId: 'run_torn' }), { signal: signal() })
    revision = await store.save(sampleCheckpoint({ runId: 'run_torn', status: 'running' }), { revision, signal: signal() })
    revision = await store.save(sampleCheckpoint({ runId: 'run_torn', status: 'done' }), { revision, signal: signal() })
    // The process died in the middle of appending revision 3.
    const file = runLogFile(directory, 'run_torn')
    const last = checkpointLines(file).at(-1) as { start: number; end: number }
    await truncate(file, last.end - 30)

    const resumed = new FileRunStore({ directory })
    expect(await resumed.load('run_torn', { signal: signal() })).toMatchObject({ revision: 2, checkpoint: { status: 'running' } })
    revision = await resumed.save(sampleCheckpoint({ runId: 'run_torn', status: 'cancelled' }), { revision: 2, signal: signal() })
    expect(revision).toBe(3)
    // Read by another process (the one that wrote the torn record is dead).
    expect(await new FileRunStore({ directory }).load('run_torn', { signal: signal() })).toMatchObject({
      revision: 3,
      checkpoint: { status: 'cancelled' },
    })
    // The torn fragment stays a line of its own, never glued to the record after it.
    expect((await readFile(file, 'utf8')).split('\n').filter((line) => line.startsWith('C '))).toHaveLength(4)
  })

  it('skips a torn last line of the message log and appends after it on a line of its own', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    await store.create(sampleCheckpoint({ runId: 'run_torn' }), { signal: signal() })
    await store.appendMessages('run_torn', { from: 0, epoch: 1, messages: [{ role: 'user', content: 'hi' }], signal: signal() })
    // The process died in the middle of writing the next batch.
    await appendFile(runLogFile(directory, 'run_torn'), 'M 60 {"from":1,"epoch":1,"messages":[{"role":"assis')
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
    expect((await resumed.load('run_torn', { signal: signal() }))?.revision).toBe(1)
  })

  it('reports a message-log entry that parses but is not a batch, naming the run', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    await store.create(sampleCheckpoint({ runId: 'run_badlog' }), { signal: signal() })
    const batch = '{"from":0,"epoch":1,"messages":[{"role":"wizard"}]}'
    await appendFile(runLogFile(directory, 'run_badlog'), `M ${Buffer.byteLength(batch)} ${batch}\n`)
    const error = await errorOf(store.readMessages('run_badlog', { length: 1, signal: signal() }))
    expect((error as CheckpointError).code).toBe('CHECKPOINT_INVALID')
    expect((error as CheckpointError).runId).toBe('run_badlog')
  })

  it('refuses a run stored by an older signalbox (run-log format 1, or a file per revision), naming the run and the versions', async () => {
    const directory = await tempDir()
    await mkdir(path.join(directory, 'run_log1'))
    await writeFile(path.join(directory, 'run_log1', 'run.log'), 'signalbox-run-log 1\n')
    await mkdir(path.join(directory, 'run_revs'))
    await writeFile(
      path.join(directory, 'run_revs', 'rev-3.json'),
      JSON.stringify({ ...sampleCheckpoint({ runId: 'run_revs' }), v: 1 }),
    )
    const store = new FileRunStore({ directory })
    await store.create(sampleCheckpoint({ runId: 'run_new' }), { signal: signal() })
    for (const runId of ['run_log1', 'run_revs']) {
      const error = await errorOf(store.load(runId, { signal: signal() }))
      expect((error as CheckpointError).code).toBe('CHECKPOINT_UNSUPPORTED_VERSION')
      expect((error as Error).message).toMatch(new RegExp(`^Run "${runId}": the run was stored by an older signalbox`))
      expect((error as Error).message).toContain('run-log format 2 with checkpoint version 2')
      // Not overwritten by a new run of the same id.
      expectStoreError(
        await errorOf(store.create(sampleCheckpoint({ runId }), { signal: signal() })),
        'RUN_REVISION_CONFLICT',
        runId,
      )
    }
    const listing = await store.list({ signal: signal() })
    expect(listing.runs.map((run) => run.checkpoint.runId)).toEqual(['run_new'])
    expect(listing.errors.map((e) => e.runId).sort()).toEqual(['run_log1', 'run_revs'])
  })
})

describe('FileRunStore: compaction', () => {
  it('keeps a long run cheap to load: the log is sealed and continued, the transcript kept whole', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory, compactAfter: { checkpoints: 32 } })
    let revision = await store.create(sampleCheckpoint({ runId: 'run_long', transcript: { length: 0 } }), { signal: signal() })
    const sizes: number[] = []
    for (let n = 1; n <= 400; n++) {
      revision = await store.saveWithMessages(sampleCheckpoint({ runId: 'run_long', transcript: { length: n } }), {
        revision,
        signal: signal(),
        sync: false,
        messages: { from: n - 1, epoch: 0, messages: [{ role: 'user', content: `m${n}` }] },
      })
      if (n % 50 === 0) sizes.push((await stat(runLogFile(directory, 'run_long'))).size)
    }
    const files = await readdir(path.join(directory, 'run_long'))
    // One current log; the transcripts of the logs before it.
    expect(files.filter((name) => name.startsWith('log.'))).toEqual(['log.13'])
    expect(files.filter((name) => name.startsWith('transcript.')).length).toBe(12)
    expect(files.some((name) => name.startsWith('.tmp-'))).toBe(false)
    // What a load reads does not grow with the run's age: at most 32 checkpoints, at any point.
    expect(Math.max(...sizes)).toBeLessThan(32 * 2_200 + 1_000)
    expect(checkpointLines(runLogFile(directory, 'run_long')).length).toBeLessThanOrEqual(32)
    const fresh = new FileRunStore({ directory })
    expect(await fresh.load('run_long', { signal: signal() })).toMatchObject({
      revision: 401,
      checkpoint: { transcript: { length: 400 } },
    })
    const transcript = await fresh.readMessages('run_long', { length: 400, signal: signal() })
    expect(transcript.map((m) => m.content)).toEqual(Array.from({ length: 400 }, (_, i) => `m${i + 1}`))
    // A writer still holding a revision from before the last compaction loses.
    expectStoreError(
      await errorOf(fresh.save(sampleCheckpoint({ runId: 'run_long' }), { revision: 380, signal: signal() })),
      'RUN_REVISION_CONFLICT',
      'run_long',
    )
    // By default, by size: 256 KiB of log at most.
    const bySize = new FileRunStore({ directory })
    revision = 401
    for (let n = 401; n <= 700; n++) {
      revision = await bySize.save(sampleCheckpoint({ runId: 'run_long', transcript: { length: 400 } }), {
        revision,
        signal: signal(),
        sync: false,
      })
      expect((await stat(runLogFile(directory, 'run_long'))).size).toBeLessThan(256 * 1024 + 4_096)
    }
    expect((await readdir(path.join(directory, 'run_long'))).filter((name) => name.startsWith('log.'))).toEqual(['log.14'])
  })

  it('a seal left unfinished (its writer killed) loads as the newest checkpoint, and the next writer finishes it', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    let revision = await store.create(sampleCheckpoint({ runId: 'run_seal', transcript: { length: 0 } }), { signal: signal() })
    await store.appendMessages('run_seal', { from: 0, epoch: 1, messages: [{ role: 'user', content: 'hi' }], signal: signal() })
    revision = await store.save(sampleCheckpoint({ runId: 'run_seal', transcript: { length: 1 } }), {
      revision,
      signal: signal(),
    })
    // What a process killed right after appending its seal leaves: the sealed log, no successor.
    const sealed = sampleCheckpoint({ runId: 'run_seal', status: 'running', transcript: { length: 1 } })
    await appendFile(
      runLogFile(directory, 'run_seal'),
      checkpointRecord(revision + 1, 'dead.1', JSON.stringify(sealed), true).bytes,
    )
    const next = new FileRunStore({ directory })
    expect(await next.load('run_seal', { signal: signal() })).toEqual({ checkpoint: sealed, revision: revision + 1 })
    // A write at the pre-seal revision loses; one at the seal's finishes the seal and goes on in the next log.
    expectStoreError(
      await errorOf(next.save(sampleCheckpoint({ runId: 'run_seal' }), { revision, signal: signal() })),
      'RUN_REVISION_CONFLICT',
      'run_seal',
    )
    const after = await next.save(sampleCheckpoint({ runId: 'run_seal', status: 'done', transcript: { length: 1 } }), {
      revision: revision + 1,
      signal: signal(),
    })
    expect(after).toBe(revision + 2)
    expect((await readdir(path.join(directory, 'run_seal'))).sort()).toEqual(['log.2', 'transcript.2'])
    expect(await store.load('run_seal', { signal: signal() })).toMatchObject({
      revision: revision + 2,
      checkpoint: { status: 'done' },
    })
    expect(await store.readMessages('run_seal', { length: 1, signal: signal() })).toEqual([{ role: 'user', content: 'hi' }])
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
    // 81 revisions: the log was compacted twice (every 32 checkpoints) while both raced on it.
    expect((await readdir(path.join(directory, 'run_count'))).filter((name) => name.startsWith('log.'))).toEqual(['log.3'])
    expectStoreError(await errorOf(store.save(base, { revision: 40, signal: signal() })), 'RUN_REVISION_CONFLICT', 'run_count')
  })

  it.each(['fsync', 'no-fsync', 'big', 'compact'])(
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
      // Its checkpoint follows a torn record, if the kill left one, on a line of its own.
      const claimed = await store.load('run_killed', { signal: signal() })
      const next = await store.save(
        { ...(claimed?.checkpoint as Checkpoint), transcript: { length: length + 1 } },
        { revision: claimed?.revision as number, signal: signal() },
      )
      expect(await new FileRunStore({ directory }).load('run_killed', { signal: signal() })).toMatchObject({
        revision: next,
        checkpoint: { transcript: { length: length + 1 }, lease: { owner: 'next-host' } },
      })
    },
  )
})

describe('FileRunStore: messages and checkpoint in one write', () => {
  it('saveWithMessages appends the batch and the checkpoint that counts it; a stale revision writes neither', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    const revision = await store.create(sampleCheckpoint({ runId: 'run_one', transcript: { length: 0 } }), { signal: signal() })
    const file = runLogFile(directory, 'run_one')
    const lines = async () => (await readFile(file, 'utf8')).split('\n').filter(Boolean).length
    const before = await lines()
    const next = await store.saveWithMessages(sampleCheckpoint({ runId: 'run_one', transcript: { length: 2 } }), {
      revision,
      signal: signal(),
      messages: {
        from: 0,
        epoch: 0,
        messages: [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: 'b' },
        ],
      },
    })
    expect(next).toBe(2)
    expect(await lines()).toBe(before + 2)
    const reread = new FileRunStore({ directory })
    expect(await reread.load('run_one', { signal: signal() })).toMatchObject({
      revision: 2,
      checkpoint: { transcript: { length: 2 } },
    })
    expect((await reread.readMessages('run_one', { length: 2, signal: signal() })).map((m) => m.content)).toEqual(['a', 'b'])

    expectStoreError(
      await errorOf(
        reread.saveWithMessages(sampleCheckpoint({ runId: 'run_one' }), {
          revision: 1,
          signal: signal(),
          messages: { from: 2, epoch: 0, messages: [{ role: 'user', content: 'stale' }] },
        }),
      ),
      'RUN_REVISION_CONFLICT',
      'run_one',
    )
    expect(await lines()).toBe(before + 2)
  })

  it('a stored run writes each step in one append: appendMessages only for the new run', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory, fsync: false })
    const calls = { appendMessages: 0, saveWithMessages: 0 }
    for (const name of ['appendMessages', 'saveWithMessages'] as const) {
      const method = store[name].bind(store) as (...args: unknown[]) => Promise<unknown>
      ;(store as unknown as Record<string, unknown>)[name] = (...args: unknown[]) => {
        calls[name]++
        return method(...args)
      }
    }
    const agent = createAgent({
      provider: new ScriptedProvider({
        script: [
          { toolCalls: [{ id: 'c1', name: 'noop', arguments: {} }] },
          { toolCalls: [{ id: 'c2', name: 'noop', arguments: {} }] },
          { content: 'done' },
        ],
      }),
      tools: [tool({ name: 'noop', description: 'Does nothing.', schema: z.object({}), execute: async () => 'ok' })],
      store,
    })
    const result = await agent.run('go', { runId: 'run_steps' })
    expect(result.status).toBe('done')
    expect(calls.appendMessages).toBe(1)
    expect(calls.saveWithMessages).toBeGreaterThan(0)
    const stored = await new FileRunStore({ directory }).load('run_steps', { signal: signal() })
    expect(stored?.checkpoint.status).toBe('done')
    const messages = await store.readMessages('run_steps', {
      length: stored?.checkpoint.transcript.length ?? 0,
      signal: signal(),
    })
    expect(messages.at(-1)).toMatchObject({ role: 'assistant', content: 'done' })
  })
})
