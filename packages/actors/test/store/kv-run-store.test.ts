/**
 * The shared `RunStore` conformance suite against JetStream KV on the shared server, one bucket per
 * test (deleted after), plus what only the KV store has: its bucket settings, corrupt values and
 * two connections racing on one run.
 */
import { randomBytes } from 'node:crypto'
import { jetstreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { KvRunStore } from '@signalbox/actors/store'
import { CheckpointError, pruneRuns, type RunStoreError } from '@signalbox/core/store'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { describeRunStoreConformance, errorOf, expectStoreError } from '@signalbox/core/testing/conformance'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { NATS_URL } from '../../../../test/support/env.ts'
import { CARD, cardAgent, gate, MASKED } from '../../../../test/support/store/card-agent.ts'
import { type ClaimResult, race } from '../../../../test/support/store/racers.ts'

let admin: NatsConnection
const buckets = new Set<string>()
const connections: NatsConnection[] = []
const signal = () => new AbortController().signal

beforeAll(async () => {
  admin = await connect({ servers: NATS_URL, name: 'kv-run-store-admin' })
})
afterAll(async () => {
  await admin?.close()
})
afterEach(async () => {
  for (const connection of connections.splice(0)) await connection.close()
  const kvm = new Kvm(admin)
  for (const bucket of buckets) await (await kvm.open(bucket)).destroy().catch(() => {})
  buckets.clear()
})

function uniqueBucket(): string {
  const bucket = `runs_test_${randomBytes(6).toString('hex')}`
  buckets.add(bucket)
  return bucket
}

async function connection(name: string): Promise<NatsConnection> {
  const nc = await connect({ servers: NATS_URL, name })
  connections.push(nc)
  return nc
}

describeRunStoreConformance('nats-kv', async ({ clock }) => {
  const bucket = uniqueBucket()
  const store = new KvRunStore({ connection: await connection('kv-conformance'), bucket, clock })
  const rewriteCheckpoint = async (runId: string, edit: (json: string) => string) => {
    const kv = await new Kvm(admin).open(bucket)
    const entry = await kv.get(`run.${runId}`)
    if (entry === null) throw new Error(`no checkpoint of ${runId}`)
    await kv.put(`run.${runId}`, edit(entry.string()))
  }
  return { store, cleanup: async () => {}, rewriteCheckpoint }
})

describe('KvRunStore specifics', () => {
  it('creates its bucket with history 1 and the replicas asked for', async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-settings'), bucket, replicas: 1 })
    await store.create(sampleCheckpoint({ runId: 'run_settings' }), { signal: signal() })
    const status = await (await new Kvm(admin).open(bucket)).status()
    expect(status.history).toBe(1)
    expect(status.replicas).toBe(1)
    expect(status.bucket).toBe(bucket)
  })

  it('refuses a bucket name NATS cannot hold', async () => {
    const nc = await connection('kv-bad-bucket')
    expect(() => new KvRunStore({ connection: nc, bucket: 'runs.prod' })).toThrow('Invalid run-store bucket "runs.prod"')
  })

  it('reports a corrupt and a future-version value naming the run, and still lists the others', async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-corrupt'), bucket })
    for (const runId of ['run_ok', 'run_cut', 'run_v9']) await store.create(sampleCheckpoint({ runId }), { signal: signal() })
    const kv = await new Kvm(admin).open(bucket)
    const text = JSON.stringify(sampleCheckpoint({ runId: 'run_cut' }))
    await kv.put('run.run_cut', text.slice(0, 100))
    await kv.put('run.run_v9', JSON.stringify({ ...sampleCheckpoint({ runId: 'run_v9' }), v: 9 }))

    const error = await errorOf(store.load('run_cut', { signal: signal() }))
    expect(error).toBeInstanceOf(CheckpointError)
    expect((error as CheckpointError).code).toBe('CHECKPOINT_TRUNCATED')
    expect((error as Error).message).toContain('Run "run_cut"')
    const listing = await store.list({ signal: signal() })
    expect(listing.runs.map((run) => run.checkpoint.runId)).toEqual(['run_ok'])
    expect(listing.errors.map((e) => [e.runId, e.code]).sort()).toEqual([
      ['run_cut', 'CHECKPOINT_TRUNCATED'],
      ['run_v9', 'CHECKPOINT_UNSUPPORTED_VERSION'],
    ])
  })

  it('of two processes (connections) claiming an orphaned run, exactly one owns it', async () => {
    const bucket = uniqueBucket()
    const [a, b] = [
      new KvRunStore({ connection: await connection('host-a'), bucket }),
      new KvRunStore({ connection: await connection('host-b'), bucket }),
    ]
    await a.create(sampleCheckpoint({ runId: 'run_orphan', lease: { owner: 'gone', epoch: 4, expiresAt: 0 } }), {
      signal: signal(),
    })
    const results = await Promise.allSettled([
      a.claim('run_orphan', { owner: 'host-a', leaseMs: 60_000, signal: signal() }),
      b.claim('run_orphan', { owner: 'host-b', leaseMs: 60_000, signal: signal() }),
    ])
    const winners = results.filter((result) => result.status === 'fulfilled')
    expect(winners).toHaveLength(1)
    const loser = results.find((result): result is PromiseRejectedResult => result.status === 'rejected')
    expect(['RUN_REVISION_CONFLICT', 'RUN_LEASE_HELD']).toContain((loser?.reason as RunStoreError | undefined)?.code)
    const stored = await a.load('run_orphan', { signal: signal() })
    expect(stored?.checkpoint.lease?.epoch).toBe(5)
    expect(stored).toEqual(winners[0]?.status === 'fulfilled' ? winners[0].value : undefined)
  })

  it('refuses a value over the server payload limit before sending it', async () => {
    const store = new KvRunStore({ connection: await connection('kv-large'), bucket: uniqueBucket() })
    await store.create(sampleCheckpoint({ runId: 'run_big' }), { signal: signal() })
    const error = await errorOf(
      store.appendMessages('run_big', {
        from: 0,
        epoch: 1,
        messages: [{ role: 'tool', tool_call_id: 'c', content: 'x'.repeat(2 * 1024 * 1024) }],
        signal: signal(),
      }),
    )
    expectStoreError(error, 'RUN_STORE_TOO_LARGE', 'run_big')
  })
})

describe('KvRunStore: what is stored', () => {
  /** Every message the bucket's stream holds, as text. */
  async function streamText(bucket: string): Promise<string> {
    const jsm = await jetstreamManager(admin)
    const { state } = await jsm.streams.info(`KV_${bucket}`)
    let text = ''
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const message = await jsm.streams.getMessage(`KV_${bucket}`, { seq }).catch(() => null)
      if (message) text += `${message.subject} ${message.string()}\n`
    }
    return text
  }

  it('keeps one value per key (history 1): 50 saves leave one checkpoint message', async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-history'), bucket })
    let revision = await store.create(sampleCheckpoint({ runId: 'run_h' }), { signal: signal() })
    for (let i = 0; i < 50; i++) revision = await store.save(sampleCheckpoint({ runId: 'run_h' }), { revision, signal: signal() })
    const info = await (await jetstreamManager(admin)).streams.info(`KV_${bucket}`, { subjects_filter: '>' })
    expect(info.config.max_msgs_per_subject).toBe(1)
    expect(info.state.messages).toBe(1)
    expect(info.state.subjects).toEqual({ [`$KV.${bucket}.run.run_h`]: 1 })
  })

  it('a card number masked by a hook never reaches the bucket, even while the hook runs; pruned, the run leaves nothing', async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-masking'), bucket })
    const hook = gate()
    const handle = cardAgent(store, hook).start('what card do I have?', { runId: 'run_card' })
    await hook.entered
    // Lease renewals (every 10 ms) are written while the hook holds the raw output.
    const before = (await store.load('run_card', { signal: signal() }))?.revision as number
    for (let i = 0; i < 100 && ((await store.load('run_card', { signal: signal() }))?.revision ?? 0) < before + 2; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect(await streamText(bucket)).not.toContain(CARD)
    hook.release()
    expect((await handle.result).status).toBe('done')
    const text = await streamText(bucket)
    expect(text).not.toContain(CARD)
    expect(text).toContain(MASKED)

    const result = await pruneRuns(store, { before: Date.now() + 1_000, signal: signal() })
    expect(result.pruned.map((run) => run.checkpoint.runId)).toEqual(['run_card'])
    const { state } = await (await jetstreamManager(admin)).streams.info(`KV_${bucket}`)
    expect(state.messages).toBe(0)
  })
})

describe('KvRunStore: one owner per epoch (claim keys)', () => {
  const expired = (epoch: number) => ({ owner: 'gone', epoch, expiresAt: 0 })
  /** Puts a claim key as a claimant that created it and then stopped (or is still writing) would have. */
  async function strandedClaim(bucket: string, runId: string, epoch: number, claim: unknown): Promise<void> {
    const kv = await new Kvm(admin).open(bucket)
    await kv.create(`claim.${runId}.${epoch}`, JSON.stringify(claim))
  }

  it("a late owner's write stops when the next epoch is claimed meanwhile, although its compare-and-set passed", async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-late-owner'), bucket })
    const revision = await store.create(sampleCheckpoint({ runId: 'run_late', lease: expired(4) }), { signal: signal() })
    // Another host created epoch 5's key from this revision and is writing the checkpoint: on a
    // server whose replicated compare-and-set lets two writes at one revision through, both land.
    await strandedClaim(bucket, 'run_late', 5, { owner: 'host-b', revision, expiresAt: Date.now() + 60_000 })
    const error = await errorOf(
      store.save(sampleCheckpoint({ runId: 'run_late', lease: expired(4), savedAt: 1 }), { revision, signal: signal() }),
    )
    expectStoreError(error, 'RUN_REVISION_CONFLICT', 'run_late')
    expect((error as RunStoreError).message).toContain('host-b')
    // host-b's write from the older revision can no longer land: the next claim skips its epoch.
    const next = await store.claim('run_late', { owner: 'host-a', leaseMs: 60_000, signal: signal() })
    expect(next.checkpoint.lease).toMatchObject({ owner: 'host-a', epoch: 6 })
  })

  it('the owner whose write outlived a claim renews past it; so does one facing a key that is not a claim', async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-outlived'), bucket })
    const mine = (runId: string, savedAt: number) => sampleCheckpoint({ runId, lease: expired(4), savedAt })
    const revision = await store.create(mine('run_outlived', 0), { signal: signal() })
    await strandedClaim(bucket, 'run_outlived', 5, { owner: 'host-b', revision, expiresAt: Date.now() + 60_000 })
    // Refused once (host-b claimed from the revision this write replaced), although it landed...
    expectStoreError(
      await errorOf(store.save(mine('run_outlived', 1), { revision, signal: signal() })),
      'RUN_REVISION_CONFLICT',
      'run_outlived',
    )
    const landed = (await store.load('run_outlived', { signal: signal() }))?.revision as number
    expect(landed).toBeGreaterThan(revision)
    // ...then host-b's write from that revision can never land: the owner's next renewal goes on.
    // (It used to be refused at every renewal: a host's takeover scan claimed and lost the run
    // every few seconds, and nobody drove it again.)
    expect(await store.save(mine('run_outlived', 2), { revision: landed, signal: signal() })).toBeGreaterThan(landed)

    const odd = await store.create(mine('run_odd', 0), { signal: signal() })
    await strandedClaim(bucket, 'run_odd', 5, 'not a claim')
    expect(await store.save(mine('run_odd', 1), { revision: odd, signal: signal() })).toBeGreaterThan(odd)
  })

  it('a claim key its claimant never wrote is skipped once the run moved on or the claim expired; a live one refuses', async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-stranded'), bucket })
    const claim = (runId: string) => store.claim(runId, { owner: 'host-c', leaseMs: 60_000, signal: signal() })
    const moved = await store.create(sampleCheckpoint({ runId: 'run_moved', lease: expired(4) }), { signal: signal() })
    await strandedClaim(bucket, 'run_moved', 5, { owner: 'x', revision: moved - 1, expiresAt: Date.now() + 60_000 })
    expect((await claim('run_moved')).checkpoint.lease).toMatchObject({ owner: 'host-c', epoch: 6 })

    const died = await store.create(sampleCheckpoint({ runId: 'run_died', lease: expired(4) }), { signal: signal() })
    await strandedClaim(bucket, 'run_died', 5, { owner: 'x', revision: died, expiresAt: Date.now() - 1 })
    await strandedClaim(bucket, 'run_died', 6, 'not a claim')
    expect((await claim('run_died')).checkpoint.lease).toMatchObject({ owner: 'host-c', epoch: 7 })

    const live = await store.create(sampleCheckpoint({ runId: 'run_live', lease: expired(4) }), { signal: signal() })
    await strandedClaim(bucket, 'run_live', 5, { owner: 'host-b', revision: live, expiresAt: Date.now() + 60_000 })
    expectStoreError(await errorOf(claim('run_live')), 'RUN_REVISION_CONFLICT', 'run_live')
    expect((await store.load('run_live', { signal: signal() }))?.revision).toBe(live)
  })

  it('a renewal keeps its epoch and key; deleting the run removes its claim keys', async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-claim-keys'), bucket })
    await store.create(sampleCheckpoint({ runId: 'run_k', lease: expired(1) }), { signal: signal() })
    await store.claim('run_k', { owner: 'host-a', leaseMs: 1, signal: signal() })
    await store.claim('run_k', { owner: 'host-a', leaseMs: 60_000, signal: signal() })
    const taken = await store.claim('run_k', { owner: 'host-a', leaseMs: 60_000, signal: signal() })
    expect(taken.checkpoint.lease?.epoch).toBe(2)
    const jsm = await jetstreamManager(admin)
    const subjects = async () =>
      Object.keys((await jsm.streams.info(`KV_${bucket}`, { subjects_filter: '>' })).state.subjects ?? {}).sort()
    expect(await subjects()).toEqual([`$KV.${bucket}.claim.run_k.2`, `$KV.${bucket}.run.run_k`])
    await store.delete('run_k', { signal: signal() })
    expect(await subjects()).toEqual([])
  })
})

describe('KvRunStore across processes', () => {
  const RACE_CHILD = 'packages/actors/test/store/fixtures/kv-race-child.ts'

  it('of three processes claiming the same orphaned run, exactly one wins', async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-race-setup'), bucket })
    await store.create(sampleCheckpoint({ runId: 'run_orphan', lease: { owner: 'dead', epoch: 1, expiresAt: 0 } }), {
      signal: signal(),
    })
    const results = await race<ClaimResult>(
      RACE_CHILD,
      ['p1', 'p2', 'p3'].map((owner) => [NATS_URL, bucket, 'run_orphan', 'claim', owner]),
    )
    const winners = results.filter((result) => result.won)
    expect(winners).toHaveLength(1)
    for (const loser of results.filter((result) => !result.won))
      expect(['RUN_REVISION_CONFLICT', 'RUN_LEASE_HELD']).toContain(loser.code)
    expect((await store.load('run_orphan', { signal: signal() }))?.checkpoint.lease).toMatchObject({
      owner: winners[0]?.owner,
      epoch: 2,
    })
  })

  it('two processes doing load + compare-and-set increments lose no update', async () => {
    const bucket = uniqueBucket()
    const store = new KvRunStore({ connection: await connection('kv-count-setup'), bucket })
    const base = sampleCheckpoint({ runId: 'run_count' })
    await store.create({ ...base, usage: { ...base.usage, totalTokens: 0 } }, { signal: signal() })
    await race(RACE_CHILD, [
      [NATS_URL, bucket, 'run_count', 'count', '30'],
      [NATS_URL, bucket, 'run_count', 'count', '30'],
    ])
    expect((await store.load('run_count', { signal: signal() }))?.checkpoint.usage.totalTokens).toBe(60)
  })
})
