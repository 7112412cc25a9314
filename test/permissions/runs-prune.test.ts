/**
 * `signalbox runs prune` on a KV run store under the permissions `rolePermissions` generates, on a
 * private nats-server: the user of the agent role (the run store's writers) prunes the runs it may
 * delete, and the server logs no permission violation. A prune purges the run's keys from the
 * bucket's stream (`$JS.API.STREAM.PURGE.KV_<bucket>`), which the tables must grant.
 */
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import { authorizationBlock, rolePermissions } from '@signalbox/actors/trust'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../cli/support.ts'
import { type ConfigServer, startConfigServer } from '../support/nats-config-server.ts'

const prefix = 'prune.v1'
const runBucket = 'prune_runs'
const DAY = 86_400_000
const signal = () => AbortSignal.timeout(10_000)

const claw = rolePermissions('agent', { prefix, runBucket, agent: 'claw' })
const observer = rolePermissions('observer', { prefix, runBucket })

let server: ConfigServer
const buses: NatsBus[] = []

beforeAll(async () => {
  server = await startConfigServer(() =>
    authorizationBlock([
      { login: { user: 'claw', password: 'pw-claw' }, permissions: claw },
      { login: { user: 'observer', password: 'pw-observer' }, permissions: observer },
    ]),
  )
})

afterAll(async () => {
  for (const bus of buses.splice(0)) await bus.close()
  await server?.dispose()
})

describe('signalbox runs prune under the generated permissions', () => {
  it('the agent role prunes finished runs from the KV store; no permission violation', async () => {
    const bus = await connectNatsBus({
      servers: server.url,
      prefix,
      user: 'claw',
      pass: 'pw-claw',
      inboxPrefix: claw.inboxPrefix,
      consumerPrefix: claw.name,
      name: 'claw',
    })
    buses.push(bus)
    const store = new KvRunStore({ connection: bus.connection, bucket: runBucket })
    const none = { approvals: [], questions: [] }
    await store.create(
      sampleCheckpoint({
        runId: 'run_old',
        status: 'done',
        pending: none,
        lease: { owner: 'gone', epoch: 1, expiresAt: 0 },
        savedAt: Date.now() - 40 * DAY,
      }),
      {
        signal: signal(),
      },
    )
    await store.appendMessages('run_old', { from: 0, epoch: 0, messages: [{ role: 'user', content: 'hi' }], signal: signal() })
    // Taken over once before it ended: its claim key (epoch 2) goes with it.
    const taken = await store.claim('run_old', { owner: 'claw-host', leaseMs: 1, signal: signal() })
    await store.save({ ...taken.checkpoint, savedAt: Date.now() - 40 * DAY }, { revision: taken.revision, signal: signal() })
    // The stream's subjects, asked as a host's user may (STREAM.INFO on the bucket).
    const claimKeys = async () => {
      const filter = JSON.stringify({ subjects_filter: `$KV.${runBucket}.claim.>` })
      const reply = await bus.connection.request(`$JS.API.STREAM.INFO.KV_${runBucket}`, filter, { timeout: 5_000 })
      return Object.keys((reply.json() as { state: { subjects?: Record<string, number> } }).state.subjects ?? {})
    }
    expect(await claimKeys()).toEqual([`$KV.${runBucket}.claim.run_old.2`])
    await store.create(sampleCheckpoint({ runId: 'run_recent', status: 'done', pending: none, savedAt: Date.now() }), {
      signal: signal(),
    })

    const login = ['--nats', server.url, '--prefix', prefix, '--user', 'claw', '--password', 'pw-claw']
    const pruned = await runCli([
      'runs',
      'prune',
      '--bucket',
      runBucket,
      ...login,
      '--inbox-prefix',
      claw.inboxPrefix,
      '--older-than',
      '30d',
      '--json',
    ])
    expect(pruned.code, `${pruned.stdout}\n${pruned.stderr}`).toBe(0)
    const rows = pruned.stdout
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { type: string; runId?: string })
    expect(rows.filter((row) => row.type === 'pruned').map((row) => row.runId)).toEqual(['run_old'])
    const left = await store.list({ signal: signal() })
    expect(left.runs.map((run) => run.checkpoint.runId)).toEqual(['run_recent'])
    expect(await claimKeys()).toEqual([])
    await expect(store.readMessages('run_old', { length: 1, signal: signal() })).rejects.toMatchObject({
      code: 'RUN_TRANSCRIPT_GAP',
    })

    // The observer reads the store (`signalbox runs`) but may not prune it.
    const watching = ['--nats', server.url, '--prefix', prefix, '--user', 'observer', '--password', 'pw-observer']
    const listed = await runCli(['runs', '--bucket', runBucket, ...watching, '--inbox-prefix', observer.inboxPrefix, '--json'])
    expect(listed.code, listed.stderr).toBe(0)
    expect(server.violations()).toEqual([])
    expect(observer.publish.map((rule) => rule.subject)).not.toContain(`$JS.API.STREAM.PURGE.KV_${runBucket}`)
  })
})
