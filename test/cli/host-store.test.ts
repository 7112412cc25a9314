/**
 * `signalbox host --store <dir>`: a real host process resumes, on start, the stored runs of its
 * agents whose owner's lease expired, claiming each in the store under its host id; a run with a
 * live lease and a finished run are left alone.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { FileRunStore } from '@signalbox/core/store'
import { describe, expect, it, onTestFinished } from 'vitest'
import { sampleCheckpoint } from '../../packages/core/test/store/sample.ts'
import { uniquePrefix } from '../support/env.ts'
import { busArgs, deleteStream, FIXTURES, startProcess } from './support.ts'

const signal = () => AbortSignal.timeout(10_000)

describe('signalbox host with a run store', () => {
  it('takes over the runs of its agents whose host died, and only those', async () => {
    const prefix = uniquePrefix()
    const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-host-store-'))
    onTestFinished(async () => {
      await rm(directory, { recursive: true, force: true })
      await deleteStream(prefix)
    })
    const store = new FileRunStore({ directory, fsync: false })
    await store.create(sampleCheckpoint({ runId: 'run_orphan', lease: { owner: 'dead-host', epoch: 1, expiresAt: 1_000 } }), {
      signal: signal(),
    })
    await store.create(
      sampleCheckpoint({ runId: 'run_live', lease: { owner: 'other-host', epoch: 1, expiresAt: Date.now() + 600_000 } }),
      { signal: signal() },
    )
    await store.create(sampleCheckpoint({ runId: 'run_done', status: 'done' }), { signal: signal() })

    const host = startProcess([
      'host',
      path.join(FIXTURES, 'resumable-host.ts'),
      ...busArgs(prefix),
      '--no-directory',
      '--host-id',
      'host-1',
      '--store',
      directory,
      '--json',
    ])
    onTestFinished(async () => {
      await host.stop('SIGKILL').catch(() => {})
    })
    await host.waitFor(/resumed run_orphan/, 30_000)
    const claimed = host.stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line))
      .filter((record) => record.type === 'claimed')
    expect(claimed).toEqual([
      { type: 'claimed', runId: 'run_orphan', agentId: 'trains', from: 'dead-host', epoch: 2, at: expect.any(Number) },
    ])
    expect(host.stdout).not.toContain('resumed run_live')
    expect(host.stdout).not.toContain('resumed run_done')
    expect((await store.load('run_orphan', { signal: signal() }))?.checkpoint.lease?.owner).toBe('host-1')
    expect((await store.load('run_live', { signal: signal() }))?.checkpoint.lease?.owner).toBe('other-host')
  }, 60_000)
})
