/**
 * A write the server stored while its attempt came back as a failure that reads "not stored" (seen
 * while a stream leader was killed under load: a run then conflicted with its own write). The
 * store recognises it on read-back, by its bytes (an earlier attempt failed, so it may have been
 * stored), instead of failing the run with a conflict.
 */
import { randomBytes } from 'node:crypto'
import { connect, errors, type NatsConnection } from '@nats-io/transport-node'
import { KvRunStore } from '@signalbox/actors/store'
import { sampleCheckpoint } from '@signalbox/core/testing'
import { afterEach, expect, it } from 'vitest'
import { NATS_URL } from '../../../../test/support/env.ts'

const cleanups: (() => Promise<unknown>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
})

/**
 * The connection, except that the next request to `subjects` (once armed) is carried out and
 * then answered with the error of a request nobody took: the write is stored, its answer says not.
 */
function misreporting(nc: NatsConnection, subjects: string) {
  let armed = false
  const connection = new Proxy(nc, {
    get(target, property) {
      if (property === 'request') {
        return async (
          subject: string,
          ...rest: Parameters<NatsConnection['request']> extends [string, ...infer R] ? R : never
        ) => {
          const reply = await target.request(subject, ...rest)
          if (armed && subject.startsWith(subjects)) {
            armed = false
            throw new errors.RequestError('no responders', { cause: new errors.NoRespondersError(subject) })
          }
          return reply
        }
      }
      const value = Reflect.get(target, property)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
  return {
    connection,
    arm: () => {
      armed = true
    },
    fired: () => !armed,
  }
}

async function setUp() {
  const bucket = `misreported_${randomBytes(4).toString('hex')}`
  const nc = await connect({ servers: NATS_URL, name: 'misreported' })
  cleanups.push(async () => {
    await nc.request(`$JS.API.STREAM.DELETE.KV_${bucket}`).catch(() => {})
    await nc.close()
  })
  const link = misreporting(nc, `$KV.${bucket}.run.`)
  const store = new KvRunStore({ connection: link.connection, bucket, retryMs: 10_000 })
  return { store, link }
}

const signal = () => AbortSignal.timeout(20_000)

it('a save stored but answered as a failure is this write on the retry, not a conflict with itself', async () => {
  const { store, link } = await setUp()
  const checkpoint = sampleCheckpoint({ runId: 'run_misreported', lease: { owner: 'host-a', epoch: 0, expiresAt: 1 } })
  const created = await store.create(checkpoint, { signal: signal() })
  link.arm()
  const saved = await store.save({ ...checkpoint, savedAt: checkpoint.savedAt + 1 }, { revision: created, signal: signal() })
  expect(link.fired()).toBe(true)
  const stored = await store.load('run_misreported', { signal: signal() })
  expect(stored?.revision).toBe(saved)
  expect(stored?.checkpoint.savedAt).toBe(checkpoint.savedAt + 1)
  // The compare-and-set still holds against another writer: a save at the old revision conflicts.
  await expect(
    store.save({ ...checkpoint, savedAt: checkpoint.savedAt + 2 }, { revision: created, signal: signal() }),
  ).rejects.toMatchObject({ code: 'RUN_REVISION_CONFLICT' })
})

it('a create stored but answered as a failure is this run on the retry, not "the run already exists"', async () => {
  const { store, link } = await setUp()
  const checkpoint = sampleCheckpoint({ runId: 'run_created' })
  link.arm()
  const created = await store.create(checkpoint, { signal: signal() })
  expect(link.fired()).toBe(true)
  expect((await store.load('run_created', { signal: signal() }))?.revision).toBe(created)
})
