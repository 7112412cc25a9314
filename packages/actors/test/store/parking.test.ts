/**
 * A stored run that cannot be loaded (its checkpoint counts messages its log lacks, as a lost
 * write leaves it) is claimed once by a host's takeover, reported once, and parked with why: the
 * next scans leave it alone, `resume` refuses it naming the reason, and the other runs go on.
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createAgent } from '@signalbox/core'
import { FileRunStore } from '@signalbox/core/store'
import { ScriptedProvider, sampleCheckpoint } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { RunTakeover, type TakeoverEvent } from '../../src/system/index.ts'

const signal = () => AbortSignal.timeout(10_000)

describe('a run the store cannot load', () => {
  it('is claimed once, reported once and parked with its reason; later scans leave it alone', async () => {
    const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-parking-'))
    onTestFinished(() => rm(directory, { recursive: true, force: true }))
    const store = new FileRunStore({ directory, fsync: false })
    const dead = { owner: 'host-a', epoch: 1, expiresAt: 1_000 }
    // Counts 3 messages; the log holds 1.
    await store.create(sampleCheckpoint({ runId: 'run_gap', status: 'running', lease: dead }), { signal: signal() })
    await store.appendMessages('run_gap', { from: 0, epoch: 1, messages: [{ role: 'user', content: 'hi' }], signal: signal() })
    // And one whose checkpoint is not even readable.
    await store.create(sampleCheckpoint({ runId: 'run_junk', status: 'running', lease: dead }), { signal: signal() })
    const { rewriteLatestCheckpoint } = await import('../../../../test/support/run-log-files.ts')
    rewriteLatestCheckpoint(directory, 'run_junk', () => '{"v":2,')

    const agent = createAgent({ id: 'trains', hostId: 'host-b', store, provider: new ScriptedProvider({ script: [] }) })
    const events: TakeoverEvent[] = []
    let failed: () => void = () => {}
    const resumeFailed = new Promise<void>((resolve) => {
      failed = resolve
    })
    const takeover = new RunTakeover({
      store,
      hostId: 'host-b',
      leaseMs: 60_000,
      agents: () => [agent],
      onEvent: (event) => {
        events.push(event)
        if (event.type === 'error') failed()
      },
    })
    expect((await takeover.scan(signal())).claimed).toEqual(['run_gap'])
    await resumeFailed
    for (let i = 0; i < 3; i++) expect(await takeover.scan(signal())).toEqual({ claimed: [], lost: [] })

    expect(events.map((event) => `${event.type}:${event.runId}`)).toEqual([
      'unreadable:run_junk',
      'claimed:run_gap',
      'error:run_gap',
    ])
    expect((events[2] as { error: { code: string } }).error.code).toBe('RUN_TRANSCRIPT_GAP')
    const parked = await store.load('run_gap', { signal: signal() })
    expect(parked?.checkpoint).toMatchObject({
      status: 'parked',
      parked: { code: 'RUN_TRANSCRIPT_GAP', by: 'host-b', message: expect.stringContaining('has no message 1 of the 3') },
    })
    expect(parked?.checkpoint.lease).toBeUndefined()
    await expect(agent.resume('run_gap')).rejects.toMatchObject({
      code: 'RUN_NOT_RESUMABLE',
      message: expect.stringContaining('it is parked: its stored state cannot be continued (RUN_TRANSCRIPT_GAP:'),
    })
    const all = await agent.resumeAll()
    expect(all.runs).toEqual([])
    expect(all.errors.map((error) => (error as { runId?: string }).runId)).toEqual(['run_junk'])
  })
})
