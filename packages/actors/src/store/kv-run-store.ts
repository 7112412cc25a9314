import { type JetStreamClient, type JetStreamManager, jetstream } from '@nats-io/jetstream'
import { type KV, type KvEntry, Kvm } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import { type Clock, ConfigError, type Message, systemClock } from '@signalbox/core'
import { claimedCheckpoint, runIdOfKey, runKey, untilAborted } from '@signalbox/core/internal'
import {
  type AppendMessagesOptions,
  assembleTranscript,
  type Checkpoint,
  CheckpointError,
  type ClaimOptions,
  decodeCheckpoint,
  encodeCheckpoint,
  type ListRunsOptions,
  type MessageBatch,
  matchesListing,
  parseBatch,
  type RunLease,
  type RunListing,
  type RunStore,
  RunStoreError,
  type StoredRun,
} from '@signalbox/core/store'
import { isWrongLastSequence, latestEntries, sameBytes } from './kv-entries.ts'
import { retryTransient } from './kv-retry.ts'

export interface KvRunStoreOptions {
  connection: NatsConnection
  /** One bucket per deployment (every host of the deployment uses the same). Default `signalbox_runs`. */
  bucket?: string
  /** Copies of the bucket in a JetStream cluster: 1, 3 or 5. Default 1 (a single server). */
  replicas?: 1 | 3 | 5
  clock?: Clock
  /**
   * How long one operation keeps retrying while the server or cluster cannot answer (a leader
   * election, a node lost, a reconnect) before it fails with `RUN_STORE_UNAVAILABLE`. Default 30 s.
   */
  retryMs?: number
  /**
   * How long one attempt waits for the server's answer. Default 2 s: during a leader election
   * nobody answers a request (it is not refused), so this bounds what each attempt loses to it.
   * An attempt that timed out is retried; a write whose answer was lost is recognised on read-back.
   */
  attemptTimeoutMs?: number
}

const BUCKET = /^[A-Za-z0-9_-]{1,64}$/
const DEFAULT_ATTEMPT_TIMEOUT_MS = 2_000
const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * Runs in a JetStream KV bucket with history 1: `run.<run>` holds the checkpoint, and each
 * message-log batch is its own key `log.<run>.<from>.<epoch>` (a KV value cannot be appended to;
 * a batch is written once and never rewritten). Every checkpoint write is a publish that the
 * server stores only if the key is still at the revision the writer read (a compare-and-set).
 * Revisions are the KV's: increasing per run, not consecutive.
 *
 * A claim that starts a new epoch first creates the key `claim.<run>.<epoch>` (create-if-absent):
 * only its creator may write the epoch's checkpoint. A create is atomic on every server, where a
 * compare-and-set on a replicated bucket is not on nats-server before 2.9.21 / 2.10 (concurrent
 * updates at one revision may all be stored): the claim key keeps one owner per epoch there too.
 * A claim key whose claimant never wrote the checkpoint (it died, or the run moved on under it)
 * is skipped by the next claimant, who takes the epoch after. Every write of a leased checkpoint
 * then checks that no claim of the next epoch exists: a late owner racing a new claimant stops at
 * that write instead of going on beside it. `delete` (and so `runs prune`) removes the claim keys.
 *
 * Reads go to the stream leader, never to a replica (`allow_direct: false`): a replica may not
 * have applied a write the leader acknowledged, so a write is readable by the next operation of
 * any process. Failures a cluster has while it elects a leader or loses a node (no responders,
 * timeouts, "temporarily unavailable", no peers yet for a replicated bucket) are retried for up to `retryMs`; a write whose answer was
 * lost is recognised when it is read back (the stored value is the one this writer sent).
 */
export class KvRunStore implements RunStore {
  readonly #connection: NatsConnection
  readonly #js: JetStreamClient
  readonly #bucket: string
  readonly #replicas: number
  readonly #clock: Clock
  readonly #retryMs: number
  /** Runs this store wrote or read: an append to one of them needs no existence check. */
  readonly #known = new Set<string>()
  #kv: Promise<KV> | undefined
  #jsm: Promise<JetStreamManager> | undefined

  constructor(options: KvRunStoreOptions) {
    const bucket = options.bucket ?? 'signalbox_runs'
    if (!BUCKET.test(bucket))
      throw new ConfigError(`Invalid run-store bucket "${bucket}": use 1-64 letters, digits, "_" or "-".`, { bucket })
    this.#connection = options.connection
    this.#js = jetstream(options.connection, { timeout: options.attemptTimeoutMs ?? DEFAULT_ATTEMPT_TIMEOUT_MS })
    this.#bucket = bucket
    this.#replicas = options.replicas ?? 1
    this.#clock = options.clock ?? systemClock
    this.#retryMs = options.retryMs ?? 30_000
  }

  get bucket(): string {
    return this.#bucket
  }

  #open(): Promise<KV> {
    if (this.#kv === undefined) {
      // `allow_direct: false`: this client reads from the stream leader (see the class comment).
      this.#kv = new Kvm(this.#js).create(this.#bucket, { history: 1, replicas: this.#replicas, allow_direct: false })
      // A failed open (server down, no leader yet) is retried by the next attempt instead of being cached.
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
    const revision = await this.#do(options.signal, 'Creating the run', runId, async (kv, ambiguous) => {
      try {
        return await kv.put(key, value, { previousSeq: 0 })
      } catch (error) {
        if (!isWrongLastSequence(error)) throw error
      }
      // The key has a history: a run deleted before (a purge marker), or this very write, stored
      // by an earlier attempt whose answer was lost.
      const current = await kv.get(key)
      if (current !== null && current.operation !== 'PUT') return kv.update(key, value, current.revision)
      if (current !== null && ambiguous && sameBytes(current.value, value)) return current.revision
      throw new RunStoreError('RUN_REVISION_CONFLICT', runId, 'the run already exists.', { expected: 0 })
    })
    this.#remember(runId)
    return revision
  }

  async save(checkpoint: Checkpoint, options: { revision: number; signal: AbortSignal }): Promise<number> {
    const { runId } = checkpoint
    const key = checkpointKey(runId)
    const value = this.#encode(runId, encodeCheckpoint(checkpoint))
    if (options.revision <= 0) {
      throw new RunStoreError('RUN_REVISION_CONFLICT', runId, `expected revision ${options.revision} is not a stored revision.`)
    }
    return this.#do(options.signal, 'Saving the run', runId, async (kv, ambiguous) => {
      let revision: number | undefined
      try {
        revision = await kv.update(key, value, options.revision)
      } catch (error) {
        if (!isWrongLastSequence(error)) throw error
      }
      const current = revision === undefined ? await kv.get(key) : null
      if (revision === undefined && (current === null || current.operation !== 'PUT')) {
        throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
      }
      // An earlier attempt was stored and only its answer lost (or misreported): that write is this one.
      if (revision === undefined && ambiguous && current !== null && sameBytes(current.value, value)) revision = current.revision
      if (revision !== undefined) {
        if (checkpoint.lease !== undefined) await this.#refuseIfClaimed(kv, runId, checkpoint.lease.epoch + 1, options.revision)
        return revision
      }
      throw new RunStoreError(
        'RUN_REVISION_CONFLICT',
        runId,
        `expected revision ${options.revision}, found ${current?.revision}.`,
        {
          expected: options.revision,
          actual: current?.revision,
        },
      )
    })
  }

  async load(runId: string, options: { signal: AbortSignal }): Promise<StoredRun | undefined> {
    const key = checkpointKey(runId)
    return this.#do(options.signal, 'Loading the run', runId, async (kv) => {
      const entry = await kv.get(key)
      if (entry === null || entry.operation !== 'PUT') return undefined
      const stored = { checkpoint: decodeCheckpoint(runId, entry.value), revision: entry.revision }
      this.#remember(runId)
      return stored
    })
  }

  async list(options: ListRunsOptions): Promise<RunListing> {
    return this.#do(options.signal, 'Listing runs', undefined, async (kv) => {
      const listing: RunListing = { runs: [], errors: [] }
      for (const entry of await latestEntries(kv, await this.#manager(), this.#bucket, 'run.*', options.signal)) {
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

  async claim(runId: string, options: ClaimOptions): Promise<StoredRun> {
    const current = await this.load(runId, { signal: options.signal })
    if (current === undefined) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
    const claimed = claimedCheckpoint(current, { ...options, clock: this.#clock })
    let { checkpoint } = claimed
    const lease = checkpoint.lease as RunLease
    if (!claimed.renewal) {
      const epoch = await this.#claimEpoch(runId, lease.epoch, { ...options, base: current.revision, expiresAt: lease.expiresAt })
      checkpoint = { ...checkpoint, lease: { ...lease, epoch } }
    }
    // `save` refuses if the next epoch was claimed meanwhile.
    const revision = await this.save(checkpoint, { revision: current.revision, signal: options.signal })
    return { checkpoint, revision }
  }

  /**
   * Creates the claim key of the first free epoch from `epoch` and resolves with that epoch. A key
   * already there belongs to a claimant who is still writing the checkpoint at `base` (the run is
   * theirs: `RUN_REVISION_CONFLICT`), or to one who never will (the checkpoint moved on from the
   * revision it claimed, or its claim expired): the epoch is burnt and the next one tried.
   */
  async #claimEpoch(runId: string, epoch: number, options: ClaimOptions & { base: number; expiresAt: number }): Promise<number> {
    const claim: EpochClaim = { owner: options.owner, revision: options.base, expiresAt: options.expiresAt }
    const value = this.#encode(runId, JSON.stringify(claim))
    for (let next = epoch; next < epoch + MAX_BURNT_EPOCHS; next++) {
      const key = claimKey(runId, next)
      const won = await this.#do(options.signal, 'Claiming the run', runId, async (kv) => {
        try {
          await kv.put(key, value, { previousSeq: 0 })
          return true
        } catch (error) {
          if (!isWrongLastSequence(error)) throw error
        }
        const held = parseClaim(await kv.get(key))
        // This claimant's own key, stored by an attempt whose answer was lost.
        if (held?.owner === claim.owner && held.revision === claim.revision) return true
        if (!isLive(held, options.base, this.#clock.now())) return false
        throw new RunStoreError('RUN_REVISION_CONFLICT', runId, `"${held.owner}" is claiming it (epoch ${next}).`, {
          expected: options.base,
        })
      })
      if (won) return next
    }
    throw new RunStoreError('RUN_REVISION_CONFLICT', runId, `${MAX_BURNT_EPOCHS} epochs in a row were claimed and never written.`)
  }

  /**
   * A write of `epoch - 1`'s checkpoint from `base` stops if someone claimed `epoch` from that same
   * revision meanwhile: the run is theirs. A claim from an older revision (or expired) is burnt,
   * as `#claimEpoch` reads it: its claimant can never write, so it stops nobody. Counting it made
   * the owner that had outlived it refuse every renewal, and the run was never driven again.
   */
  async #refuseIfClaimed(kv: KV, runId: string, epoch: number, base: number): Promise<void> {
    const claim = parseClaim(await kv.get(claimKey(runId, epoch)))
    if (!isLive(claim, base, this.#clock.now())) return
    throw new RunStoreError('RUN_REVISION_CONFLICT', runId, `"${claim.owner}" claimed epoch ${epoch} of the run.`, {
      owner: claim.owner,
    })
  }

  async appendMessages(runId: string, options: AppendMessagesOptions): Promise<void> {
    const batch: MessageBatch = { from: options.from, epoch: options.epoch, messages: options.messages }
    const value = this.#encode(runId, JSON.stringify(batch))
    const key = `${logPrefix(runId)}.${options.from}.${options.epoch}`
    await this.#do(options.signal, 'Appending messages', runId, async (kv) => {
      if (!this.#known.has(runId)) {
        const run = await kv.get(checkpointKey(runId))
        if (run === null || run.operation !== 'PUT') {
          throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
        }
        this.#remember(runId)
      }
      // Not a compare-and-set: the same batch stored twice (a retry) is the same value.
      await kv.put(key, value)
    })
  }

  async readMessages(runId: string, options: { length: number; signal: AbortSignal }): Promise<Message[]> {
    return this.#do(options.signal, 'Reading messages', runId, async (kv) => {
      const batches: MessageBatch[] = []
      // Stream order is write order (the KV revision); `assembleTranscript` then orders by epoch.
      for (const entry of await latestEntries(kv, await this.#manager(), this.#bucket, `${logPrefix(runId)}.>`, options.signal)) {
        const batch = parseBatch(runId, decoder.decode(entry.value))
        if (batch !== undefined) batches.push(batch)
      }
      return assembleTranscript(runId, batches, options.length)
    })
  }

  async delete(runId: string, options: { signal: AbortSignal }): Promise<void> {
    const stream = `KV_${this.#bucket}`
    await this.#do(options.signal, 'Deleting the run', runId, async () => {
      const jsm = await this.#manager()
      // The checkpoint first: once it is gone the run is gone, whatever happens to the log keys.
      // Purged from the stream, not marked deleted: a pruned run leaves nothing behind.
      await jsm.streams.purge(stream, { filter: subjectOf(this.#bucket, checkpointKey(runId)) })
      await jsm.streams.purge(stream, { filter: `${subjectOf(this.#bucket, logPrefix(runId))}.>` })
      await jsm.streams.purge(stream, { filter: `${subjectOf(this.#bucket, claimPrefix(runId))}.>` })
    })
    this.#known.delete(runId)
  }

  /** Bounded: a long-lived host forgets the oldest runs (their next append checks again). */
  #remember(runId: string): void {
    if (this.#known.size >= 10_000) this.#known.delete(this.#known.values().next().value as string)
    this.#known.add(runId)
  }

  #manager(): Promise<JetStreamManager> {
    // Without the API check at creation (a request, which an election would fail).
    if (this.#jsm === undefined) {
      this.#jsm = this.#js.jetstreamManager(false)
      this.#jsm.catch(() => {
        this.#jsm = undefined
      })
    }
    return this.#jsm
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

  #do<T>(
    signal: AbortSignal,
    what: string,
    runId: string | undefined,
    work: (kv: KV, ambiguous: boolean) => Promise<T>,
  ): Promise<T> {
    return retryTransient(
      { signal, what, retryMs: this.#retryMs, clock: this.#clock, ...(runId === undefined ? {} : { runId }) },
      (ambiguous) =>
        // An attempt waits at most its own timeout; the caller's signal ends the wait at once.
        untilAborted(
          this.#open().then((kv) => work(kv, ambiguous)),
          signal,
          what,
        ),
    )
  }
}

const checkpointKey = (runId: string) => `run.${runKey(runId)}`
const logPrefix = (runId: string) => `log.${runKey(runId)}`
const claimPrefix = (runId: string) => `claim.${runKey(runId)}`
const claimKey = (runId: string, epoch: number) => `${claimPrefix(runId)}.${epoch}`

/** Epochs one claim skips at most (each a claim that was never written) before giving up. */
const MAX_BURNT_EPOCHS = 1_000

/** The value of a claim key: who claims the epoch, from which revision, until when. */
interface EpochClaim {
  owner: string
  revision: number
  expiresAt: number
}

/** A claim whose claimant may still write the checkpoint it claimed from `base` (not burnt). */
function isLive(claim: EpochClaim | undefined, base: number, now: number): claim is EpochClaim {
  return claim !== undefined && claim.revision === base && claim.expiresAt > now
}

function parseClaim(entry: KvEntry | null): EpochClaim | undefined {
  if (entry === null || entry.operation !== 'PUT') return undefined
  try {
    const claim = JSON.parse(decoder.decode(entry.value)) as Partial<EpochClaim>
    if (typeof claim.owner === 'string' && typeof claim.revision === 'number' && typeof claim.expiresAt === 'number') {
      return claim as EpochClaim
    }
  } catch {}
  // Not a claim this store wrote: it holds its epoch as a claim nobody can finish would.
  return { owner: '', revision: -1, expiresAt: 0 }
}
const subjectOf = (bucket: string, key: string) => `$KV.${bucket}.${key}`
