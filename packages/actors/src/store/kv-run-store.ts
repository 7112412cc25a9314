import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream'
import { type KV, type KvEntry, Kvm } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import { type Clock, ConfigError, type Message, systemClock } from '@signalbox/core'
import { untilAborted } from '@signalbox/core/internal'
import {
  type AppendMessagesOptions,
  assembleTranscript,
  type Checkpoint,
  CheckpointError,
  type ClaimOptions,
  claimRun,
  decodeCheckpoint,
  encodeCheckpoint,
  type ListRunsOptions,
  type MessageBatch,
  matchesListing,
  parseBatch,
  type RunListing,
  type RunStore,
  RunStoreError,
  runIdOfKey,
  runKey,
  type StoredRun,
} from '@signalbox/core/store'

export interface KvRunStoreOptions {
  connection: NatsConnection
  /** One bucket per deployment (every host of the deployment uses the same). Default `signalbox_runs`. */
  bucket?: string
  /** Copies of the bucket in a JetStream cluster: 1, 3 or 5. Default 1 (a single server). */
  replicas?: 1 | 3 | 5
  clock?: Clock
}

const BUCKET = /^[A-Za-z0-9_-]{1,64}$/
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * Runs in a JetStream KV bucket with history 1: `run.<run>` holds the checkpoint, and each
 * message-log batch is its own key `log.<run>.<from>.<epoch>` (a KV value cannot be appended to;
 * a batch is written once and never rewritten). Every checkpoint write is `kv.update(key, value,
 * revision)`, which the server refuses unless the key is still at that revision: the
 * compare-and-set that keeps a run to one owner, also across a cluster (the KV stream is
 * replicated with `replicas` and the leader orders the writes). Revisions are the KV's: increasing
 * per run, not consecutive.
 */
export class KvRunStore implements RunStore {
  readonly #connection: NatsConnection
  readonly #bucket: string
  readonly #replicas: number
  readonly #clock: Clock
  #kv: Promise<KV> | undefined

  constructor(options: KvRunStoreOptions) {
    const bucket = options.bucket ?? 'signalbox_runs'
    if (!BUCKET.test(bucket))
      throw new ConfigError(`Invalid run-store bucket "${bucket}": use 1-64 letters, digits, "_" or "-".`, { bucket })
    this.#connection = options.connection
    this.#bucket = bucket
    this.#replicas = options.replicas ?? 1
    this.#clock = options.clock ?? systemClock
  }

  get bucket(): string {
    return this.#bucket
  }

  #open(): Promise<KV> {
    if (this.#kv === undefined) {
      this.#kv = new Kvm(this.#connection).create(this.#bucket, { history: 1, replicas: this.#replicas })
      // A failed open (server down) is retried by the next call instead of being cached.
      this.#kv.catch(() => {
        this.#kv = undefined
      })
    }
    return this.#kv
  }

  async create(checkpoint: Checkpoint, options: { signal: AbortSignal }): Promise<number> {
    const { runId } = checkpoint
    const key = checkpointKey(runId)
    const value = this.#encode(runId, encodeCheckpoint(checkpoint))
    return this.#do(options.signal, 'Creating the run', async (kv) => {
      try {
        return await kv.create(key, value)
      } catch (error) {
        if (isWrongLastSequence(error))
          throw new RunStoreError('RUN_REVISION_CONFLICT', runId, 'the run already exists.', { expected: 0 })
        throw error
      }
    })
  }

  async save(checkpoint: Checkpoint, options: { revision: number; signal: AbortSignal }): Promise<number> {
    const { runId } = checkpoint
    const key = checkpointKey(runId)
    const value = this.#encode(runId, encodeCheckpoint(checkpoint))
    return this.#do(options.signal, 'Saving the run', async (kv) => {
      try {
        if (options.revision <= 0)
          throw new RunStoreError(
            'RUN_REVISION_CONFLICT',
            runId,
            `expected revision ${options.revision} is not a stored revision.`,
          )
        return await kv.update(key, value, options.revision)
      } catch (error) {
        if (!isWrongLastSequence(error)) throw error
        const current = await kv.get(key)
        if (current === null || current.operation !== 'PUT')
          throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
        throw new RunStoreError(
          'RUN_REVISION_CONFLICT',
          runId,
          `expected revision ${options.revision}, found ${current.revision}.`,
          {
            expected: options.revision,
            actual: current.revision,
          },
        )
      }
    })
  }

  async load(runId: string, options: { signal: AbortSignal }): Promise<StoredRun | undefined> {
    const key = checkpointKey(runId)
    return this.#do(options.signal, 'Loading the run', async (kv) => {
      const entry = await kv.get(key)
      if (entry === null || entry.operation !== 'PUT') return undefined
      return { checkpoint: decodeCheckpoint(runId, entry.value), revision: entry.revision }
    })
  }

  async list(options: ListRunsOptions): Promise<RunListing> {
    return this.#do(options.signal, 'Listing runs', async (kv) => {
      const listing: RunListing = { runs: [], errors: [] }
      // One ordered consumer over every checkpoint, instead of a get per run.
      for (const entry of await latest(kv, 'run.*', options.signal)) {
        const runId = runIdOfKey(entry.key.slice('run.'.length))
        try {
          const checkpoint = decodeCheckpoint(runId, entry.value)
          if (matchesListing(checkpoint, options)) listing.runs.push({ checkpoint, revision: entry.revision })
        } catch (error) {
          if (!CheckpointError.is(error)) throw error
          listing.errors.push(error)
        }
      }
      listing.runs.sort((a, b) => (a.checkpoint.runId < b.checkpoint.runId ? -1 : 1))
      return listing
    })
  }

  claim(runId: string, options: ClaimOptions): Promise<StoredRun> {
    return claimRun(this, runId, { ...options, clock: this.#clock })
  }

  async appendMessages(runId: string, options: AppendMessagesOptions): Promise<void> {
    const batch: MessageBatch = { from: options.from, epoch: options.epoch, messages: options.messages }
    const value = this.#encode(runId, JSON.stringify(batch))
    await this.#do(options.signal, 'Appending messages', async (kv) => {
      const run = await kv.get(checkpointKey(runId))
      if (run === null || run.operation !== 'PUT')
        throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
      await kv.put(`${logPrefix(runId)}.${options.from}.${options.epoch}`, value)
    })
  }

  async readMessages(runId: string, options: { length: number; signal: AbortSignal }): Promise<Message[]> {
    return this.#do(options.signal, 'Reading messages', async (kv) => {
      const batches: MessageBatch[] = []
      // Stream order is write order (the KV revision); `assembleTranscript` then orders by epoch.
      for (const entry of await latest(kv, `${logPrefix(runId)}.>`, options.signal)) {
        const batch = parseBatch(runId, decoder.decode(entry.value))
        if (batch !== undefined) batches.push(batch)
      }
      return assembleTranscript(runId, batches, options.length)
    })
  }

  async delete(runId: string, options: { signal: AbortSignal }): Promise<void> {
    await this.#do(options.signal, 'Deleting the run', async (kv) => {
      // The checkpoint first: once it is gone the run is gone, whatever happens to the log keys.
      await kv.purge(checkpointKey(runId))
      for (const key of await this.#logKeys(kv, runId)) await kv.purge(key)
    })
  }

  async #logKeys(kv: KV, runId: string): Promise<string[]> {
    const keys: string[] = []
    for await (const key of await kv.keys(`${logPrefix(runId)}.>`)) keys.push(key)
    return keys
  }

  #encode(runId: string, text: string): Uint8Array {
    const bytes = encoder.encode(text)
    const limit = this.#connection.info?.max_payload ?? 1024 * 1024
    // Headers and the subject share the payload limit: keep some room for them.
    if (bytes.byteLength > limit - 1024) {
      throw new RunStoreError(
        'RUN_STORE_TOO_LARGE',
        runId,
        `a value of ${bytes.byteLength} bytes is over the server's ${limit}-byte limit.`,
        {
          size: bytes.byteLength,
          limit,
        },
      )
    }
    return bytes
  }

  #do<T>(signal: AbortSignal, what: string, work: (kv: KV) => Promise<T>): Promise<T> {
    signal.throwIfAborted()
    return untilAborted(
      this.#open().then((kv) => work(kv)),
      signal,
      what,
    )
  }
}

const checkpointKey = (runId: string) => `run.${runKey(runId)}`
const logPrefix = (runId: string) => `log.${runKey(runId)}`

/** The current value of every key matching `filter`, in write order (deleted keys left out). */
async function latest(kv: KV, filter: string, signal: AbortSignal): Promise<KvEntry[]> {
  const entries = new Map<string, KvEntry>()
  for await (const entry of await kv.history({ key: filter })) {
    signal.throwIfAborted()
    if (entry.operation === 'PUT') entries.set(entry.key, entry)
    else entries.delete(entry.key)
  }
  return [...entries.values()].sort((a, b) => a.revision - b.revision)
}

function isWrongLastSequence(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  )
}
