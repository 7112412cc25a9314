/**
 * Where a stored run waits for the disk: the journal asks for a synced write (fsync with the file
 * store) only before a tool's side effect, on entering a wait for a person, and at the end of the
 * run; the other checkpoints are written unsynced (atomic, safe against the death of the process)
 * and made durable by the next synced one. The file store's log only grows, and a record cut short
 * is skipped, so a power loss that cuts off unsynced records leaves a run that still loads.
 */
import { mkdtemp, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { checkpointLines, runLogFile } from '../../../../test/support/run-log-files.ts'
import { createAgent, decideApproval, tool } from '../../src/index.ts'
import type { Checkpoint } from '../../src/store/checkpoint.ts'
import { FileRunStore, MemoryRunStore, type SaveOptions } from '../../src/store/index.ts'
import { ScriptedProvider } from '../../src/testing/index.ts'

const signal = new AbortController().signal
const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

describe('synced writes of a stored run', () => {
  it('syncs before the tool runs, on entering the approval wait and at the end; not after the tool', async () => {
    const store = new MemoryRunStore()
    const saves: { sync: boolean; status: string; ledger: string[]; waiting: boolean }[] = []
    // The model answers again only once the tool's result was written (else the run's end, a synced
    // write asked for at once, could carry it).
    let resultWritten: () => void = () => {}
    const written = new Promise<void>((resolve) => {
      resultWritten = resolve
    })
    const record = (checkpoint: Checkpoint, sync: boolean) => {
      saves.push({
        sync,
        status: checkpoint.status,
        ledger: checkpoint.ledger.map((e) => `${e.callId}:${e.state}`),
        waiting: checkpoint.pending.approvals.length > 0,
      })
      if (checkpoint.status === 'running' && checkpoint.ledger.some((e) => e.state === 'finished')) resultWritten()
    }
    const save = store.save.bind(store)
    store.save = (checkpoint: Checkpoint, options: SaveOptions) => {
      record(checkpoint, options.sync !== false)
      return save(checkpoint, options)
    }
    // The first write creates the run (always synced); it may already be the wait, when the model
    // answered before the run's first (deferred, unsynced) save started.
    const create = store.create.bind(store)
    store.create = (checkpoint: Checkpoint, options: { signal: AbortSignal }) => {
      record(checkpoint, true)
      return create(checkpoint, options)
    }
    const ran: string[] = []
    const pay = tool({
      name: 'pay',
      description: 'Pays.',
      schema: z.object({ to: z.string() }),
      needsApproval: true,
      execute: ({ to }) => {
        // What was synced before the side effect: the `started` record.
        ran.push(`${to} after ${JSON.stringify(saves.filter((s) => s.sync).at(-1))}`)
        return `paid ${to}`
      },
    })
    const agent = createAgent({
      provider: new ScriptedProvider({
        script: async (_request, index) => {
          if (index === 0) return { toolCalls: [{ id: 'c1', name: 'pay', arguments: { to: 'kim' } }] }
          await written
          return { content: 'done' }
        },
      }),
      tools: [pay],
      reviewer: { review: async (request) => decideApproval(request, true, 'ann', 0) },
      store,
    })
    const result = await agent.run('go', { runId: 'r1' })
    expect(result.status).toBe('done')

    expect(ran).toEqual([
      `kim after ${JSON.stringify({ sync: true, status: 'running', ledger: ['c1:started'], waiting: false })}`,
    ])
    // Entering the wait: synced (the request is shown only after it).
    expect(saves.find((s) => s.waiting)?.sync).toBe(true)
    // The tool's result: unsynced.
    expect(saves.filter((s) => s.ledger.includes('c1:finished') && s.status === 'running').every((s) => !s.sync)).toBe(true)
    expect(saves.filter((s) => s.ledger.includes('c1:finished') && s.status === 'running').length).toBeGreaterThan(0)
    // The end: synced.
    expect(saves.at(-1)).toMatchObject({ sync: true, status: 'done' })
  })

  it('file store: a power loss that drops the unsynced tail of the log leaves the last synced revision readable', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-sync-'))
    dirs.push(directory)
    const store = new FileRunStore({ directory })
    let revision = await store.create(sampleCheckpoint({ runId: 'r1', usage: usage(1) }), { signal })
    revision = await store.save(sampleCheckpoint({ runId: 'r1', usage: usage(2) }), { revision, signal }) // synced: 2
    const file = runLogFile(directory, 'r1')
    const synced = (await stat(file)).size
    const commitLog = path.join(directory, (await readdir(directory)).find((name) => name.startsWith('.commit-')) as string)
    const committed = (await stat(commitLog)).size
    for (const n of [3, 4, 5]) {
      revision = await store.save(sampleCheckpoint({ runId: 'r1', usage: usage(n) }), { revision, sync: false, signal })
    }
    // The power loss: what was synced is on the disk, the unsynced records are not (or only
    // partly), in the run's log nor in the commit log that a synced write flushes.
    await truncate(file, synced + 100)
    await truncate(commitLog, committed + 50)
    const resumed = new FileRunStore({ directory })
    const loaded = await resumed.load('r1', { signal })
    expect(loaded).toMatchObject({ revision: 2, checkpoint: { usage: usage(2) } })
    // Writing on from there works.
    revision = await resumed.save(sampleCheckpoint({ runId: 'r1', usage: usage(6) }), { revision: 2, signal })
    expect(revision).toBe(3)
    expect((await new FileRunStore({ directory }).load('r1', { signal }))?.checkpoint.usage.totalTokens).toBe(6)
  })

  it('file store: a log cut at any byte loads at its last whole checkpoint record', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-sync-'))
    dirs.push(directory)
    const store = new FileRunStore({ directory, fsync: false })
    let revision = await store.create(sampleCheckpoint({ runId: 'r2', usage: usage(1) }), { signal })
    for (const n of [2, 3, 4]) {
      await store.appendMessages('r2', { from: n - 2, epoch: 1, messages: [{ role: 'user', content: `m${n}` }], signal })
      revision = await store.save(sampleCheckpoint({ runId: 'r2', usage: usage(n) }), { revision, sync: n === 4, signal })
    }
    const file = runLogFile(directory, 'r2')
    const whole = await readFile(file)
    const ends = checkpointLines(file).map((line) => line.end)
    for (let cut = 0; cut <= whole.byteLength; cut += cut < ends[0]! ? 97 : 13) {
      await writeFile(file, whole.subarray(0, cut))
      const complete = ends.filter((end) => end <= cut).length
      const loaded = new FileRunStore({ directory }).load('r2', { signal })
      if (complete === 0) await expect(loaded).rejects.toMatchObject({ code: 'CHECKPOINT_TRUNCATED', runId: 'r2' })
      else await expect(loaded).resolves.toMatchObject({ revision: complete, checkpoint: { usage: usage(complete) } })
    }
  })
})

function usage(n: number) {
  return { promptTokens: 0, completionTokens: n, totalTokens: n }
}
