/**
 * The used-approval ledger of a pool of tool hosts, in a JetStream KV bucket: one key per decision
 * (a digest of its `requestId`), written with create-if-absent, so the first host to record a
 * decision's use wins, atomically, whichever host of the pool (queue group) a call reaches and
 * whether or not that host restarted since. The entry names the call that used it (its idempotency
 * key) and, once the call is answered, the answer: a retry of the same call, at any host, gets it
 * and the tool does not run again. Entries go with the bucket's age limit, which must outlast every
 * decision a host accepts (the gate refuses one valid for longer).
 */
import { createHash, randomUUID } from 'node:crypto'
import { type JetStreamClient, jetstream } from '@nats-io/jetstream'
import { type KV, type KvEntry, Kvm } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import { type Clock, ConfigError, systemClock } from '@signalbox/core'
import { isWrongLastSequence } from '../store/kv-entries.ts'
import { retryTransient } from '../store/kv-retry.ts'
import type { SameCallAnswer, SharedApprovalLedger } from './used-approvals.ts'

/** Entries are kept this long by default: a decision's validity (its deadline) must fit in it. */
export const DEFAULT_LEDGER_RETENTION_MS = 7 * 86_400_000

export interface KvUsedApprovalsOptions<T> {
  connection: NatsConnection
  bucket: string
  /** Copies of the bucket in a JetStream cluster. Default 1. */
  replicas?: 1 | 3 | 5
  /** The bucket's age limit when this host creates it (an existing bucket keeps its own). Default 7 days. */
  retentionMs?: number
  /** An answer read back from the ledger, or undefined if it is not one. */
  decode(value: unknown): T | undefined
  clock?: Clock
  /** How long one operation keeps retrying while the server cannot answer (an election). Default 10 s. */
  retryMs?: number
}

interface Stored {
  v: 1
  /** The call that used the decision (its idempotency key). */
  identity: string
  /** The claim that wrote the entry: a writer recognises its own write when the server's answer was lost. */
  claim: string
  at: number
  answer?: unknown
  /** The answer was too large to keep: a retry is told the call ran, not what it returned. */
  answerTooLarge?: boolean
}

const BUCKET = /^[A-Za-z0-9_-]{1,64}$/
const encoder = new TextEncoder()
const decoder = new TextDecoder()

export function kvUsedApprovals<T>(options: KvUsedApprovalsOptions<T>): SharedApprovalLedger<T> {
  const { connection, bucket, decode } = options
  if (!BUCKET.test(bucket))
    throw new ConfigError(`Invalid used-approval bucket "${bucket}": use 1-64 letters, digits, "_" or "-".`, { bucket })
  const retention = options.retentionMs ?? DEFAULT_LEDGER_RETENTION_MS
  if (!(retention > 0)) throw new ConfigError(`The used-approval ledger's retention must be positive, got ${retention}.`)
  const clock = options.clock ?? systemClock
  const retryMs = options.retryMs ?? 10_000
  const js: JetStreamClient = jetstream(connection, { timeout: 5_000 })
  let opened: Promise<KV> | undefined
  const open = () => {
    if (opened === undefined) {
      // History 1, read from the leader: a claim read back must be the latest write.
      opened = new Kvm(js).create(bucket, { history: 1, ttl: retention, replicas: options.replicas ?? 1, allow_direct: false })
      opened.catch(() => {
        opened = undefined
      })
    }
    return opened
  }
  let retentionOf: Promise<number> | undefined
  // A failed attempt may still have stored its write: each write below recognises its own on read-back.
  const attempt = <R>(signal: AbortSignal, what: string, work: (kv: KV) => Promise<R>) =>
    retryTransient({ signal, what, retryMs }, async () => work(await open()))

  const parse = (entry: KvEntry | null): Stored | undefined => {
    if (entry === null || entry.operation !== 'PUT') return undefined
    try {
      const stored = JSON.parse(decoder.decode(entry.value)) as Stored
      return typeof stored.identity === 'string' && typeof stored.claim === 'string' ? stored : undefined
    } catch {
      return undefined
    }
  }

  /** The answer recorded for `key`, waiting for it until `answerBy` (undefined if none came). */
  const answerOf = async (key: string, stored: Stored, answerBy: number, signal: AbortSignal): Promise<SameCallAnswer<T>> => {
    const recorded = (s: Stored): SameCallAnswer<T> => {
      if (s.answer === undefined) return 'unkept'
      const answer = decode(s.answer)
      return answer === undefined ? 'unkept' : { answer }
    }
    if (stored.answer !== undefined || stored.answerTooLarge) return recorded(stored)
    const kv = await open()
    const watch = await kv.watch({ key })
    const stop = () => watch.stop()
    const timer = clock.setTimeout(stop, Math.max(0, answerBy - clock.now()))
    signal.addEventListener('abort', stop, { once: true })
    try {
      for await (const entry of watch) {
        const next = parse(entry)
        if (next !== undefined && (next.answer !== undefined || next.answerTooLarge)) return recorded(next)
      }
      signal.throwIfAborted()
      return 'unanswered'
    } finally {
      clock.clearTimeout(timer)
      signal.removeEventListener('abort', stop)
      stop()
    }
  }

  return {
    retentionMs(signal) {
      retentionOf ??= attempt(signal, "Reading the used-approval ledger's settings", async (kv) => {
        // An existing bucket keeps the age limit it was made with (0: none, entries never go).
        const { ttl } = await kv.status()
        return ttl > 0 ? ttl : Number.POSITIVE_INFINITY
      })
      retentionOf.catch(() => {
        retentionOf = undefined
      })
      return retentionOf
    },
    async claim(requestId, identity, { answerBy, signal }) {
      const key = createHash('sha256').update(requestId).digest('hex')
      const claim = randomUUID()
      const entry: Stored = { v: 1, identity, claim, at: clock.now() }
      const value = encoder.encode(JSON.stringify(entry))
      const readBack = (got: KvEntry | null) => {
        const stored = parse(got)
        // Anything unreadable under the key is kept, never used: no call may run on it.
        if (got === null || stored === undefined)
          throw new ConfigError(`The used-approval ledger holds no readable entry for request ${requestId}.`)
        return { stored, revision: got.revision }
      }
      const result = await attempt(signal, "Recording an approval's use", async (kv) => {
        // A key already there may be this very claim, stored by an earlier attempt (`claim` tells).
        try {
          return { revision: await kv.create(key, value) }
        } catch (error) {
          if (!isWrongLastSequence(error)) throw error
        }
        return readBack(await kv.get(key))
      })
      if (!('stored' in result) || result.stored.claim === claim) {
        let revision = result.revision
        return {
          kind: 'first',
          settle: async (answer) => {
            let value = encoder.encode(JSON.stringify({ ...entry, answer } satisfies Stored))
            // The answer went to the caller anyway; a retry then learns that the call ran, not its output.
            if (value.byteLength > (connection.info?.max_payload ?? 1024 * 1024) - 1024)
              value = encoder.encode(JSON.stringify({ ...entry, answerTooLarge: true } satisfies Stored))
            revision = await attempt(AbortSignal.timeout(retryMs), "Recording an approved call's answer", async (kv) => {
              try {
                return await kv.update(key, value, revision)
              } catch (error) {
                if (!isWrongLastSequence(error)) throw error
                // An earlier attempt stored it, and only its answer was lost or misreported.
                const got = await kv.get(key)
                const stored = parse(got)
                if (got !== null && stored?.claim === claim && (stored.answer !== undefined || stored.answerTooLarge))
                  return got.revision
                throw error
              }
            })
          },
        }
      }
      const { stored } = result
      if (stored.identity !== identity) return { kind: 'other', identity: stored.identity }
      return { kind: 'same', answer: answerOf(key, stored, answerBy, signal) }
    },
  }
}
