/**
 * Group commit of the file store: the writes of many runs share each flush of the commit log, a
 * write waits for a flush that started after it, and after a power loss (a run's log cut back,
 * the commit log kept) the next store writes every committed record back.
 */
import { fdatasync } from 'node:fs'
import { mkdtemp, open, readdir, rm, stat, truncate } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { startCrashChild } from '../../../../test/support/crash-harness.ts'
import { checkpointLines, runLogFile } from '../../../../test/support/run-log-files.ts'
import { CommitLog } from '../../src/store/commit-log.ts'
import { FileRunStore } from '../../src/store/index.ts'

const signal = new AbortController().signal
const sync = promisify(fdatasync)
const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-commit-'))
  dirs.push(dir)
  return dir
}

describe('CommitLog', () => {
  it('200 writes waiting at once share a couple of flushes; a write made during a flush waits for the next one', async () => {
    const directory = await tempDir()
    const flushes: number[] = []
    const log = new CommitLog({
      directory,
      writer: 'a1b2c3',
      syncDirectory: async () => {},
      syncFile: async (fd) => {
        flushes.push(Date.now())
        await sync(fd)
      },
    })
    const entries = Array.from({ length: 200 }, (_, i) => log.record(`r${i}/log.1`, 'id', 0, Buffer.from(`x${i}\n`)))
    await Promise.all(entries.map((seq) => log.flush(seq)))
    expect(flushes.length).toBeLessThanOrEqual(2)
    expect(await log.flush(entries.at(-1) as number)).toBeUndefined() // covered: no new flush
    expect(flushes.length).toBeLessThanOrEqual(2)

    // One written while a flush is in flight is not covered by it.
    const before = flushes.length
    const first = log.flush(log.record('r0/log.1', 'id', 10, Buffer.from('y\n')))
    const late = log.record('r1/log.1', 'id', 10, Buffer.from('z\n'))
    const second = log.flush(late)
    await Promise.all([first, second])
    expect(flushes.length).toBe(before + 2)
  })
})

describe('FileRunStore group commit after a power loss', () => {
  it('writes every committed record back into a run log cut back to its creation', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    let revision = await store.create(sampleCheckpoint({ runId: 'r1', transcript: { length: 0 } }), { signal })
    const created = (await stat(runLogFile(directory, 'r1'))).size
    for (let n = 1; n <= 10; n++) {
      revision = await store.saveWithMessages(sampleCheckpoint({ runId: 'r1', transcript: { length: n } }), {
        revision,
        signal,
        sync: n % 3 === 0,
        messages: { from: n - 1, epoch: 0, messages: [{ role: 'user', content: `m${n}` }] },
      })
    }
    // Synced through the commit log, not the run's log: a power loss may take the log's tail.
    await truncate(runLogFile(directory, 'r1'), created + 40)
    const after = new FileRunStore({ directory })
    expect(await after.load('r1', { signal })).toMatchObject({ revision: 11, checkpoint: { transcript: { length: 10 } } })
    const messages = await after.readMessages('r1', { length: 10, signal })
    expect(messages.map((m) => m.content)).toEqual(Array.from({ length: 10 }, (_, i) => `m${i + 1}`))
    // The cut-off bytes of the first lost record became a line of their own, skipped.
    expect(checkpointLines(runLogFile(directory, 'r1'))).toHaveLength(11)
    // And the run goes on.
    expect(
      await after.save(sampleCheckpoint({ runId: 'r1', status: 'done', transcript: { length: 10 } }), { revision: 11, signal }),
    ).toBe(12)
  })

  it('writes committed records back over zeros (a size that reached the disk before its data)', async () => {
    const directory = await tempDir()
    const store = new FileRunStore({ directory })
    let revision = await store.create(sampleCheckpoint({ runId: 'r0' }), { signal })
    const created = (await stat(runLogFile(directory, 'r0'))).size
    for (let n = 0; n < 3; n++) revision = await store.save(sampleCheckpoint({ runId: 'r0', savedAt: n }), { revision, signal })
    const file = runLogFile(directory, 'r0')
    const size = (await stat(file)).size
    const handle = await open(file, 'r+')
    await handle.write(Buffer.alloc(size - created), 0, size - created, created)
    await handle.close()
    expect(await new FileRunStore({ directory }).load('r0', { signal })).toMatchObject({
      revision: 4,
      checkpoint: { savedAt: 2 },
    })
  })

  it('removes the commit log of a process that is gone once its records are back, and keeps a live one', async () => {
    const directory = await tempDir()
    const writer = await startCrashChild('packages/core/test/store/fixtures/store-writer-child.ts', {
      args: [directory, 'run_gone', 'fsync'],
      ready: 'ready',
    })
    await writer.waitForLine('saved 5')
    await writer.kill()
    const logs = async () => (await readdir(directory)).filter((name) => name.startsWith('.commit-'))
    expect(await logs()).toHaveLength(1)
    const reader = new FileRunStore({ directory })
    const stored = await reader.load('run_gone', { signal })
    expect(stored?.checkpoint.transcript.length).toBeGreaterThanOrEqual(5)
    expect(await logs()).toEqual([])
    // A live store's commit log (this process) is read, and left where it is.
    const live = new FileRunStore({ directory })
    await live.create(sampleCheckpoint({ runId: 'run_live' }), { signal })
    await live.save(sampleCheckpoint({ runId: 'run_live' }), { revision: 1, signal })
    expect(await logs()).toHaveLength(1)
    expect((await new FileRunStore({ directory }).load('run_live', { signal }))?.revision).toBe(2)
    expect(await logs()).toHaveLength(1)
  })
})
