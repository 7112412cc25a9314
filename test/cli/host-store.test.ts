/**
 * `signalbox host --store <dir>`: a real host process resumes, on start, the stored runs of its
 * agents whose owner's lease expired, claiming each in the store under its host id; a run with a
 * live lease and a finished run are left alone. `--run-bucket`: an agent defined by an agent
 * module keeps its runs in the host's KV store too, and a second host takes them over.
 */
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { serveReviewer } from '@signalbox/actors'
import { connectNatsBus } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import { createAgentSystem } from '@signalbox/actors/system'
import { createSubjects } from '@signalbox/core/bus'
import { FileRunStore } from '@signalbox/core/store'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { busArgs, deleteStream, FIXTURES, ROOT, startProcess, until } from './support.ts'

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

describe('signalbox host with a KV run store (--run-bucket)', () => {
  it('an agent module’s runs are stored under the host’s id; another host takes one over and it finishes once', async () => {
    const prefix = uniquePrefix()
    const bucket = `runs_${randomBytes(4).toString('hex')}`
    const directory = await mkdtemp(path.join(os.tmpdir(), 'signalbox-host-kv-'))
    const effects = path.join(directory, 'effects')
    await writeFile(effects, '')
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: `client-${prefix}` })
    onTestFinished(async () => {
      await bus.request(`$JS.API.STREAM.DELETE.KV_${bucket}`, '', { timeoutMs: 3_000 }).catch(() => {})
      await bus.close()
      await deleteStream(prefix)
      await rm(directory, { recursive: true, force: true })
    })
    const module = path.join(ROOT, 'test/cluster/fixtures/worker-module.ts')
    const hostArgs = (id: string) => [
      'host',
      module,
      '--scripted',
      ...busArgs(prefix),
      '--no-directory',
      '--host-id',
      id,
      '--run-bucket',
      bucket,
      '--lease',
      '3000',
      '--json',
    ]
    const first = startProcess(hostArgs('host-1'), { env: { WORKER_EFFECTS: effects, WORKER_HOST: 'host-1' } })
    onTestFinished(async () => {
      await first.stop('SIGKILL').catch(() => {})
    })
    await first.waitFor(/hosting 1 agent/, 30_000)

    // A parent here runs the module's agent on that host; the child waits for an approval.
    const system = createAgentSystem({ bus, subjects: createSubjects(prefix), hostId: 'parent' })
    onTestFinished(() => system.close())
    const child = system.run('worker', 'task-1')
    child.catch(() => {})
    const store = new KvRunStore({ connection: bus.connection, bucket })
    const signal = () => AbortSignal.timeout(10_000)
    await until(() => first.stdout.includes('"run.start"'), 20_000, 'the child run to start')
    let listed: Awaited<ReturnType<KvRunStore['list']>> | undefined
    await until(
      () => {
        void store.list({ signal: signal() }).then((listing) => {
          listed = listing
        })
        return listed?.runs[0]?.checkpoint.status === 'waiting'
      },
      20_000,
      'the child run stored, waiting for its approval',
    )
    const stored = listed?.runs[0]?.checkpoint
    expect(stored).toMatchObject({ agentId: 'worker', status: 'waiting', lease: { owner: 'host-1' } })

    // Its host dies; another takes the run over once its lease is out, and the approval ends it.
    await first.stop('SIGKILL')
    const second = startProcess(hostArgs('host-2'), { env: { WORKER_EFFECTS: effects, WORKER_HOST: 'host-2' } })
    onTestFinished(async () => {
      await second.stop('SIGKILL').catch(() => {})
    })
    await second.waitFor(new RegExp(`"type":"claimed","runId":"${stored?.runId}","agentId":"worker","from":"host-1"`), 30_000)
    const reviewer = serveReviewer({
      bus,
      subjects: createSubjects(prefix),
      agentId: 'worker',
      reviewer: {
        review: async (request) => ({
          requestId: request.requestId,
          callId: request.callId,
          digest: request.digest,
          approved: true,
          reviewer: 'ops',
          decidedAt: Date.now(),
        }),
      },
    })
    onTestFinished(() => reviewer.close())
    await until(
      () => {
        void store.load(stored?.runId as string, { signal: signal() }).then((run) => {
          listed = run ? { runs: [run], errors: [] } : listed
        })
        return listed?.runs[0]?.checkpoint.status === 'done'
      },
      20_000,
      'the run to finish on host-2',
    )
    expect(await readFile(effects, 'utf8')).toBe('task-1 host-2\n')
  }, 90_000)
})
