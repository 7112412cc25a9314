/**
 * The `RunStore` contract, written once and run against every store (memory, file and the
 * JetStream KV store in signalbox's own tests; yours with `describeRunStoreConformance`). Each
 * test gets fresh run ids; leases are driven by a `SimulatedClock`, never by sleeping.
 */
import { randomBytes } from 'node:crypto'
import { afterEach, describe, expect, it } from 'vitest'
import { SimulatedClock } from 'xstate'
import { ConfigError } from '../../errors.ts'
import type { Message } from '../../messages.ts'
import { type Checkpoint, CheckpointError, parkRun, pruneRuns, type RunStore, RunStoreError } from '../../store/index.ts'
import { sampleCheckpoint } from '../sample-checkpoint.ts'

export interface StoreUnderTest {
  store: RunStore
  cleanup(): Promise<void>
  /**
   * Rewrites the stored checkpoint's JSON in place, as another signalbox would have written it
   * (a file edited, a KV value put): for the tests of what a reader refuses. Stores that cannot
   * be reached into (memory) leave it out, and those tests are not defined for them.
   */
  rewriteCheckpoint?(runId: string, edit: (json: string) => string): Promise<void>
}

/** Builds a store for one test on `clock` (the store reads lease times from it). */
export type MakeStore = (context: { clock: SimulatedClock }) => Promise<StoreUnderTest>

const signal = () => new AbortController().signal

/** The rejection of `promise`; fails if it resolves. */
export async function errorOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection, but the promise resolved')
}

/** Asserts `error` is a `RunStoreError` with `code`, naming `runId` (in its field and its message). */
export function expectStoreError(error: unknown, code: string, runId: string): void {
  expect(error).toBeInstanceOf(RunStoreError)
  expect((error as RunStoreError).code).toBe(code)
  expect((error as RunStoreError).runId).toBe(runId)
  expect((error as Error).message).toContain(runId)
}

const user = (content: string): Message => ({ role: 'user', content })
const assistant = (content: string): Message => ({ role: 'assistant', content })

/**
 * Defines vitest tests that hold a `RunStore` implementation to the contract signalbox's own
 * stores meet (create, save with revisions, leases and takeover, parking, pruning, refusing
 * unknown or damaged checkpoints). Call it in a test file:
 *
 *   describeRunStoreConformance('my store', async ({ clock }) => {
 *     const store = await openMyStore({ clock })
 *     return { store, cleanup: () => store.close() }
 *   })
 */
export function describeRunStoreConformance(name: string, makeStore: MakeStore): void {
  describe(`RunStore conformance: ${name}`, () => {
    const cleanups: (() => Promise<void>)[] = []
    afterEach(async () => {
      for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    })

    async function open(): Promise<{ store: RunStore; clock: SimulatedClock; runId: string } & Partial<StoreUnderTest>> {
      const clock = new SimulatedClock()
      clock.set(1_700_000_000_000)
      const made = await makeStore({ clock })
      cleanups.push(made.cleanup)
      return { ...made, clock, runId: `run_${randomBytes(6).toString('hex')}` }
    }

    describe('create / load', () => {
      it('stores a checkpoint with a revision and loads it back equal', async () => {
        const { store, runId } = await open()
        const checkpoint = sampleCheckpoint({ runId })
        const revision = await store.create(checkpoint, { signal: signal() })
        expect(await store.load(runId, { signal: signal() })).toEqual({ checkpoint, revision })
      })

      it('loads undefined for a run never stored', async () => {
        const { store, runId } = await open()
        expect(await store.load(runId, { signal: signal() })).toBeUndefined()
      })

      it('refuses to create a run twice', async () => {
        const { store, runId } = await open()
        await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        expectStoreError(
          await errorOf(store.create(sampleCheckpoint({ runId, status: 'running' }), { signal: signal() })),
          'RUN_REVISION_CONFLICT',
          runId,
        )
      })

      it('keys run ids with dots, spaces and non-ASCII characters, and refuses one with control characters', async () => {
        const { store } = await open()
        const runId = `run.${randomBytes(3).toString('hex')} ünï/côde`
        await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        expect((await store.load(runId, { signal: signal() }))?.checkpoint.runId).toBe(runId)
        const { runs } = await store.list({ signal: signal() })
        expect(runs.map((run) => run.checkpoint.runId)).toContain(runId)
        const error = await errorOf(store.load('bad\u0000id', { signal: signal() }))
        expect((error as RunStoreError).code).toBe('RUN_ID_INVALID')
      })

      it('refuses to store a checkpoint that does not match the schema, and stores nothing', async () => {
        const { store, runId } = await open()
        const bad = { ...sampleCheckpoint({ runId }), status: 'sleeping' } as unknown as Checkpoint
        const error = await errorOf(store.create(bad, { signal: signal() }))
        expect(error).toBeInstanceOf(CheckpointError)
        expect((error as CheckpointError).code).toBe('CHECKPOINT_INVALID')
        expect((error as Error).message).toContain(`Run "${runId}": refusing to store`)
        expect(await store.load(runId, { signal: signal() })).toBeUndefined()
      })

      it('rejects at once when the signal is already aborted', async () => {
        const { store, runId } = await open()
        const controller = new AbortController()
        controller.abort(new Error('stop'))
        await expect(store.create(sampleCheckpoint({ runId }), { signal: controller.signal })).rejects.toThrow()
        expect(await store.load(runId, { signal: signal() })).toBeUndefined()
      })
    })

    describe('save (compare-and-set)', () => {
      it('replaces the checkpoint at the expected revision and bumps the revision', async () => {
        const { store, runId } = await open()
        const r1 = await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        const next = sampleCheckpoint({ runId, status: 'running', transcript: { length: 5 } })
        const r2 = await store.save(next, { revision: r1, signal: signal() })
        expect(r2).toBeGreaterThan(r1)
        expect(await store.load(runId, { signal: signal() })).toEqual({ checkpoint: next, revision: r2 })
        expect(await store.save(sampleCheckpoint({ runId, status: 'done' }), { revision: r2, signal: signal() })).toBeGreaterThan(
          r2,
        )
        expect((await store.load(runId, { signal: signal() }))?.checkpoint.status).toBe('done')
      })

      it('refuses a stale revision and leaves the stored checkpoint as it was', async () => {
        const { store, runId } = await open()
        const r1 = await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        const r2 = await store.save(sampleCheckpoint({ runId, status: 'running' }), { revision: r1, signal: signal() })
        const error = await errorOf(store.save(sampleCheckpoint({ runId, status: 'failed' }), { revision: r1, signal: signal() }))
        expectStoreError(error, 'RUN_REVISION_CONFLICT', runId)
        const stored = await store.load(runId, { signal: signal() })
        expect(stored?.revision).toBe(r2)
        expect(stored?.checkpoint.status).toBe('running')
      })

      it('refuses to save a run that was never created', async () => {
        const { store, runId } = await open()
        expectStoreError(
          await errorOf(store.save(sampleCheckpoint({ runId }), { revision: 1, signal: signal() })),
          'RUN_NOT_FOUND',
          runId,
        )
      })

      it('lets exactly one of several concurrent writers of the same revision win', async () => {
        const { store, runId } = await open()
        const r1 = await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        const writers = ['a', 'b', 'c', 'd', 'e'].map((owner) =>
          store.save(sampleCheckpoint({ runId, lease: { owner, epoch: 1, expiresAt: 1 } }), { revision: r1, signal: signal() }),
        )
        const results = await Promise.allSettled(writers)
        const won = results.filter((result) => result.status === 'fulfilled')
        expect(won).toHaveLength(1)
        for (const result of results) {
          if (result.status === 'rejected') expectStoreError(result.reason, 'RUN_REVISION_CONFLICT', runId)
        }
        const winner = ['a', 'b', 'c', 'd', 'e'][results.findIndex((result) => result.status === 'fulfilled')]
        const stored = await store.load(runId, { signal: signal() })
        expect(stored?.revision).toBe(won[0]?.status === 'fulfilled' ? won[0].value : -1)
        expect(stored?.checkpoint.lease?.owner).toBe(winner)
      })
    })

    describe('list', () => {
      it('lists runs by status and by agent', async () => {
        const { store, runId } = await open()
        const ids = [`${runId}_a`, `${runId}_b`, `${runId}_c`]
        await store.create(sampleCheckpoint({ runId: ids[0], status: 'waiting' }), { signal: signal() })
        await store.create(sampleCheckpoint({ runId: ids[1], status: 'done' }), { signal: signal() })
        await store.create(sampleCheckpoint({ runId: ids[2], status: 'running', agentId: 'other' }), { signal: signal() })
        const all = await store.list({ signal: signal() })
        expect(all.errors).toEqual([])
        expect(all.runs.map((run) => run.checkpoint.runId).sort()).toEqual(ids)
        const unfinished = await store.list({ status: ['waiting', 'running'], signal: signal() })
        expect(unfinished.runs.map((run) => run.checkpoint.runId).sort()).toEqual([ids[0], ids[2]])
        const trains = await store.list({ agentId: 'trains', signal: signal() })
        expect(trains.runs.map((run) => run.checkpoint.runId).sort()).toEqual([ids[0], ids[1]])
      })
    })

    describe('claim', () => {
      it('gives an unowned run to the claimant with epoch 1 and a lease from the clock', async () => {
        const { store, runId, clock } = await open()
        const r1 = await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        const claimed = await store.claim(runId, { owner: 'host-a', leaseMs: 10_000, signal: signal() })
        expect(claimed.revision).toBeGreaterThan(r1)
        expect(claimed.checkpoint.lease).toEqual({ owner: 'host-a', epoch: 1, expiresAt: clock.now() + 10_000 })
        expect(await store.load(runId, { signal: signal() })).toEqual(claimed)
      })

      it('refuses a live lease held by another owner, renews for the holder, hands over after expiry', async () => {
        const { store, runId, clock } = await open()
        await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        const first = await store.claim(runId, { owner: 'host-a', leaseMs: 10_000, signal: signal() })
        const held = await errorOf(store.claim(runId, { owner: 'host-b', leaseMs: 10_000, signal: signal() }))
        expectStoreError(held, 'RUN_LEASE_HELD', runId)
        expect((held as RunStoreError).details).toMatchObject({ owner: 'host-a' })

        clock.increment(5_000)
        const renewed = await store.claim(runId, { owner: 'host-a', leaseMs: 10_000, signal: signal() })
        expect(renewed.checkpoint.lease).toEqual({ owner: 'host-a', epoch: 1, expiresAt: clock.now() + 10_000 })

        clock.increment(10_001)
        const taken = await store.claim(runId, { owner: 'host-b', leaseMs: 10_000, signal: signal() })
        expect(taken.checkpoint.lease).toMatchObject({ owner: 'host-b', epoch: 2 })
        // The former owner's next write carries the revision it knew: refused, so it stops.
        const stale = await errorOf(
          store.save(sampleCheckpoint({ runId, status: 'done' }), { revision: renewed.revision, signal: signal() }),
        )
        expectStoreError(stale, 'RUN_REVISION_CONFLICT', runId)
        expect(first.revision).toBeLessThan(taken.revision)
      })

      it('claims only at the revision the caller read, when given', async () => {
        const { store, runId } = await open()
        const r1 = await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        const r2 = await store.save(sampleCheckpoint({ runId }), { revision: r1, signal: signal() })
        expectStoreError(
          await errorOf(store.claim(runId, { owner: 'h', leaseMs: 1, revision: r1, signal: signal() })),
          'RUN_REVISION_CONFLICT',
          runId,
        )
        expect(
          (await store.claim(runId, { owner: 'h', leaseMs: 1, revision: r2, signal: signal() })).checkpoint.lease?.owner,
        ).toBe('h')
        expectStoreError(
          await errorOf(store.claim(`${runId}_none`, { owner: 'h', leaseMs: 1, signal: signal() })),
          'RUN_NOT_FOUND',
          `${runId}_none`,
        )
      })

      it('of racing claimants of an orphaned run, exactly one wins', async () => {
        const { store, runId, clock } = await open()
        await store.create(sampleCheckpoint({ runId, lease: { owner: 'dead-host', epoch: 3, expiresAt: clock.now() - 1 } }), {
          signal: signal(),
        })
        const owners = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6']
        const results = await Promise.allSettled(
          owners.map((owner) => store.claim(runId, { owner, leaseMs: 60_000, signal: signal() })),
        )
        const winners = results.flatMap((result, i) => (result.status === 'fulfilled' ? [owners[i]] : []))
        expect(winners).toHaveLength(1)
        for (const result of results) {
          if (result.status === 'rejected')
            expect(['RUN_REVISION_CONFLICT', 'RUN_LEASE_HELD']).toContain((result.reason as RunStoreError).code)
        }
        const stored = await store.load(runId, { signal: signal() })
        expect(stored?.checkpoint.lease).toMatchObject({ owner: winners[0], epoch: 4 })
      })
    })

    describe('message log', () => {
      it('reads back the first `length` messages appended in batches', async () => {
        const { store, runId } = await open()
        await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        await store.appendMessages(runId, { from: 0, epoch: 1, messages: [user('hi'), assistant('hello')], signal: signal() })
        await store.appendMessages(runId, { from: 2, epoch: 1, messages: [user('more')], signal: signal() })
        expect(await store.readMessages(runId, { length: 3, signal: signal() })).toEqual([
          user('hi'),
          assistant('hello'),
          user('more'),
        ])
        expect(await store.readMessages(runId, { length: 2, signal: signal() })).toEqual([user('hi'), assistant('hello')])
        expect(await store.readMessages(runId, { length: 0, signal: signal() })).toEqual([])
      })

      it('reports a message the checkpoint counts but the log lacks, naming the run', async () => {
        const { store, runId } = await open()
        await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        await store.appendMessages(runId, { from: 0, epoch: 1, messages: [user('hi')], signal: signal() })
        expectStoreError(await errorOf(store.readMessages(runId, { length: 2, signal: signal() })), 'RUN_TRANSCRIPT_GAP', runId)
      })

      it('lets a resumed run overwrite a tail written after the last checkpoint', async () => {
        const { store, runId } = await open()
        await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        await store.appendMessages(runId, { from: 0, epoch: 1, messages: [user('hi')], signal: signal() })
        // Written, then the process died before checkpointing length 2.
        await store.appendMessages(runId, { from: 1, epoch: 1, messages: [assistant('lost')], signal: signal() })
        await store.appendMessages(runId, { from: 1, epoch: 2, messages: [assistant('again'), user('next')], signal: signal() })
        expect(await store.readMessages(runId, { length: 3, signal: signal() })).toEqual([
          user('hi'),
          assistant('again'),
          user('next'),
        ])
      })

      it('never lets a former owner (older epoch) overwrite what the new owner wrote', async () => {
        const { store, runId } = await open()
        await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        await store.appendMessages(runId, { from: 0, epoch: 2, messages: [user('new owner')], signal: signal() })
        await store.appendMessages(runId, { from: 0, epoch: 1, messages: [user('stale owner')], signal: signal() })
        expect(await store.readMessages(runId, { length: 1, signal: signal() })).toEqual([user('new owner')])
      })

      it('refuses to append to a run that was never created', async () => {
        const { store, runId } = await open()
        expectStoreError(
          await errorOf(store.appendMessages(runId, { from: 0, epoch: 0, messages: [user('x')], signal: signal() })),
          'RUN_NOT_FOUND',
          runId,
        )
      })
    })

    describe('delete', () => {
      it('removes the checkpoint and the log; deleting again is a no-op', async () => {
        const { store, runId } = await open()
        await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        await store.appendMessages(runId, { from: 0, epoch: 0, messages: [user('x')], signal: signal() })
        await store.delete(runId, { signal: signal() })
        expect(await store.load(runId, { signal: signal() })).toBeUndefined()
        expect((await store.list({ signal: signal() })).runs.map((run) => run.checkpoint.runId)).not.toContain(runId)
        await store.delete(runId, { signal: signal() })
        // A run created again under the same id starts afresh, with an empty log.
        await store.create(sampleCheckpoint({ runId }), { signal: signal() })
        expectStoreError(await errorOf(store.readMessages(runId, { length: 1, signal: signal() })), 'RUN_TRANSCRIPT_GAP', runId)
      })
    })

    describe('long runs', () => {
      it('keeps every message and the newest checkpoint over hundreds of writes', async () => {
        const { store, runId } = await open()
        let revision = await store.create(sampleCheckpoint({ runId, transcript: { length: 0 } }), { signal: signal() })
        const steps = 150
        for (let n = 1; n <= steps; n++) {
          const checkpoint = sampleCheckpoint({ runId, status: 'running', transcript: { length: n } })
          const messages = { from: n - 1, epoch: 1, messages: [user(`m${n}`)] }
          if (store.saveWithMessages)
            revision = await store.saveWithMessages(checkpoint, { revision, signal: signal(), messages })
          else {
            await store.appendMessages(runId, { ...messages, signal: signal() })
            revision = await store.save(checkpoint, { revision, signal: signal() })
          }
        }
        const stored = await store.load(runId, { signal: signal() })
        expect(stored).toMatchObject({ revision, checkpoint: { transcript: { length: steps } } })
        const transcript = await store.readMessages(runId, { length: steps, signal: signal() })
        expect(transcript.map((m) => m.content)).toEqual(Array.from({ length: steps }, (_, i) => `m${i + 1}`))
        // Still one owner at a time: a writer holding an older revision loses.
        expectStoreError(
          await errorOf(store.save(sampleCheckpoint({ runId }), { revision: revision - 1, signal: signal() })),
          'RUN_REVISION_CONFLICT',
          runId,
        )
        const claimed = await store.claim(runId, { owner: 'next', leaseMs: 1_000, signal: signal() })
        expect(claimed.revision).toBeGreaterThan(revision)
      })
    })

    describe('parking', () => {
      it('parks a run that cannot be continued: listed as parked with why, no lease, never among the resumable runs', async () => {
        const { store, runId, clock } = await open()
        await store.create(sampleCheckpoint({ runId, status: 'running' }), { signal: signal() })
        const claimed = await store.claim(runId, { owner: 'host-a', leaseMs: 10_000, signal: signal() })
        const reason = { code: 'RUN_TRANSCRIPT_GAP', message: `Run "${runId}": the message log has no message 1.` }
        const parked = await parkRun(store, claimed, { reason, by: 'host-a', clock, signal: signal() })
        expect(parked.revision).toBeGreaterThan(claimed.revision)
        const stored = await store.load(runId, { signal: signal() })
        expect(stored).toEqual(parked)
        expect(stored?.checkpoint).toMatchObject({ status: 'parked', parked: { ...reason, by: 'host-a', at: clock.now() } })
        expect(stored?.checkpoint.lease).toBeUndefined()
        const resumable = await store.list({ status: ['running', 'waiting'], signal: signal() })
        expect(resumable.runs.map((run) => run.checkpoint.runId)).not.toContain(runId)
        const listed = await store.list({ status: ['parked'], signal: signal() })
        expect(listed.runs.map((run) => run.checkpoint.runId)).toEqual([runId])
      })

      it('parks nothing when the run changed since the caller read it', async () => {
        const { store, runId, clock } = await open()
        await store.create(sampleCheckpoint({ runId, status: 'running' }), { signal: signal() })
        const read = await store.claim(runId, { owner: 'host-a', leaseMs: 10_000, signal: signal() })
        await store.claim(runId, { owner: 'host-a', leaseMs: 10_000, signal: signal() })
        const reason = { code: 'CHECKPOINT_INVALID', message: 'bad' }
        expectStoreError(
          await errorOf(parkRun(store, read, { reason, by: 'host-a', clock, signal: signal() })),
          'RUN_REVISION_CONFLICT',
          runId,
        )
        expect((await store.load(runId, { signal: signal() }))?.checkpoint.status).toBe('running')
      })
    })

    describe('retention', () => {
      it('prunes finished runs last saved before the cutoff, their transcripts too; never a run that may go on', async () => {
        const { store, runId } = await open()
        const old = 1_600_000_000_000
        const cutoff = 1_650_000_000_000
        const runs = {
          doneOld: sampleCheckpoint({ runId: `${runId}_a`, status: 'done', savedAt: old }),
          failedOld: sampleCheckpoint({ runId: `${runId}_b`, status: 'failed', savedAt: old }),
          cancelledNew: sampleCheckpoint({ runId: `${runId}_c`, status: 'cancelled', savedAt: cutoff + 1 }),
          waitingOld: sampleCheckpoint({ runId: `${runId}_d`, status: 'waiting', savedAt: old }),
          runningOld: sampleCheckpoint({ runId: `${runId}_e`, status: 'running', savedAt: old }),
          parkedOld: sampleCheckpoint({ runId: `${runId}_f`, status: 'parked', savedAt: old }),
        }
        for (const checkpoint of Object.values(runs)) await store.create(checkpoint, { signal: signal() })
        await store.appendMessages(runs.doneOld.runId, { from: 0, epoch: 1, messages: [user('card 4242')], signal: signal() })
        const ids = (list: { checkpoint: Checkpoint }[]) => list.map((run) => run.checkpoint.runId).sort()

        const dry = await pruneRuns(store, { before: cutoff, dryRun: true, signal: signal() })
        expect(ids(dry.pruned)).toEqual([runs.doneOld.runId, runs.failedOld.runId])
        expect(await store.load(runs.doneOld.runId, { signal: signal() })).toBeDefined()

        const done = await pruneRuns(store, { before: cutoff, signal: signal() })
        expect(ids(done.pruned)).toEqual([runs.doneOld.runId, runs.failedOld.runId])
        expect(done.errors).toEqual([])
        for (const gone of [runs.doneOld, runs.failedOld]) {
          expect(await store.load(gone.runId, { signal: signal() })).toBeUndefined()
          const read = await errorOf(store.readMessages(gone.runId, { length: 1, signal: signal() }))
          expect(['RUN_NOT_FOUND', 'RUN_TRANSCRIPT_GAP']).toContain((read as RunStoreError).code)
        }
        const left = await store.list({ signal: signal() })
        expect(ids(left.runs)).toEqual(
          [runs.cancelledNew, runs.waitingOld, runs.runningOld, runs.parkedOld].map((c) => c.runId).sort(),
        )
        // Parked runs go only when asked for; runs that may go on, never.
        const parked = await pruneRuns(store, { before: cutoff, status: ['parked'], signal: signal() })
        expect(ids(parked.pruned)).toEqual([runs.parkedOld.runId])
        const refused = await errorOf(pruneRuns(store, { before: cutoff, status: ['done', 'waiting'], signal: signal() }))
        expect(refused).toBeInstanceOf(ConfigError)
        expect((await store.load(runs.waitingOld.runId, { signal: signal() }))?.checkpoint.status).toBe('waiting')
      })
    })

    describe('versions', () => {
      it('refuses a checkpoint of another schema version, naming the run and both versions', async () => {
        const { store, runId, rewriteCheckpoint } = await open()
        if (rewriteCheckpoint === undefined) {
          // A store nothing can reach into (memory) can only hold what it encoded itself.
          const bad = { ...sampleCheckpoint({ runId }), v: 3 } as unknown as Checkpoint
          expect((await errorOf(store.create(bad, { signal: signal() }))) as CheckpointError).toMatchObject({
            code: 'CHECKPOINT_INVALID',
          })
          return
        }
        await store.create(sampleCheckpoint({ runId: `${runId}_new` }), { signal: signal() })
        await store.create(sampleCheckpoint({ runId: `${runId}_old` }), { signal: signal() })
        await store.create(sampleCheckpoint({ runId: `${runId}_ok` }), { signal: signal() })
        await rewriteCheckpoint(`${runId}_new`, (json) => JSON.stringify({ ...JSON.parse(json), v: 3 }))
        await rewriteCheckpoint(`${runId}_old`, (json) => JSON.stringify({ ...JSON.parse(json), v: 1 }))
        for (const [id, version, why] of [
          [`${runId}_new`, 3, 'written by a newer signalbox'],
          [`${runId}_old`, 1, 'written by an older signalbox'],
        ] as const) {
          const error = await errorOf(store.load(id, { signal: signal() }))
          expect(error).toBeInstanceOf(CheckpointError)
          expect(error).toMatchObject({ code: 'CHECKPOINT_UNSUPPORTED_VERSION', runId: id, details: { version, supported: 2 } })
          expect((error as Error).message).toContain(
            `Run "${id}": checkpoint schema version ${version} is not supported; this signalbox reads version 2 (${why}`,
          )
          // Nor can it be claimed, resumed or overwritten by a save built on it.
          expect(await errorOf(store.claim(id, { owner: 'h', leaseMs: 1, signal: signal() }))).toBeInstanceOf(CheckpointError)
        }
        const listing = await store.list({ signal: signal() })
        expect(listing.runs.map((run) => run.checkpoint.runId)).toContain(`${runId}_ok`)
        expect(listing.errors.map((e) => e.runId).sort()).toEqual([`${runId}_new`, `${runId}_old`])
      })
    })
  })
}
