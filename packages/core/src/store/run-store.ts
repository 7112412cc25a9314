import type { Clock } from '../clock.ts'
import type { Message } from '../messages.ts'
import type { Checkpoint, StoredRun, StoredRunStatus } from './checkpoint.ts'
import { type CheckpointError, RunStoreError } from './errors.ts'
import type { AppendMessagesOptions, MessagesToAppend } from './message-log.ts'

/**
 * Where runs are kept between processes. Every write is a compare-and-set on the run's revision,
 * so two processes can never both own a run: the one that read an older revision loses with
 * `RUN_REVISION_CONFLICT` and must stop driving the run.
 */
export interface RunStore {
  /** Stores a new run at revision 1; `RUN_REVISION_CONFLICT` if the run already exists. */
  create(checkpoint: Checkpoint, options: { signal: AbortSignal }): Promise<number>
  /** Replaces the checkpoint if it is still at `revision`; resolves with the new revision. */
  save(checkpoint: Checkpoint, options: SaveOptions): Promise<number>
  /** The latest checkpoint, or `undefined` when none is stored. A bad one throws a `CheckpointError`. */
  load(runId: string, options: { signal: AbortSignal }): Promise<StoredRun | undefined>
  /** Every stored run (optionally by status / agent); unreadable runs are reported in `errors`, not thrown. */
  list(options: ListRunsOptions): Promise<RunListing>
  /** Takes (or renews) the run's lease with compare-and-set; see `claimRun`. */
  claim(runId: string, options: ClaimOptions): Promise<StoredRun>
  /** Appends messages to the run's transcript log (append-only, never rewritten). */
  appendMessages(runId: string, options: AppendMessagesOptions): Promise<void>
  /**
   * Optional: `appendMessages` of `messages` then `save`, in one write, for a store that can do
   * both at once (the file store: one append to the run's log instead of two). Same outcome and
   * errors as the two calls; a store without it gets the two calls.
   */
  saveWithMessages?(checkpoint: Checkpoint, options: SaveOptions & { messages: MessagesToAppend }): Promise<number>
  /** The first `length` messages of the transcript (what a checkpoint's `transcript.length` counts). */
  readMessages(runId: string, options: { length: number; signal: AbortSignal }): Promise<Message[]>
  /** Removes the run, its checkpoint and its message log. No-op when absent (see also `pruneRuns`). */
  delete(runId: string, options: { signal: AbortSignal }): Promise<void>
}

export interface SaveOptions {
  revision: number
  /**
   * false: the write need not survive a power loss yet (a store that syncs to disk may skip it);
   * it is still atomic and survives the death of the process, and the next synced write makes it
   * and every earlier one durable. Default true.
   */
  sync?: boolean
  signal: AbortSignal
}

export interface ListRunsOptions {
  status?: readonly StoredRunStatus[]
  agentId?: string
  signal: AbortSignal
}

export interface RunListing {
  runs: StoredRun[]
  /** One per run whose checkpoint could not be read; the other runs are still listed. */
  errors: CheckpointError[]
}

export interface ClaimOptions {
  /** Who claims (a host id); stable across restarts of the same host. */
  owner: string
  /** How long the lease lasts from now; the owner renews it by claiming again. */
  leaseMs: number
  /** Only claim if the run is still at this revision (what the caller read). Default: the latest. */
  revision?: number
  signal: AbortSignal
}

/**
 * The one claim rule, shared by every store: a run may be claimed when it has no lease, its lease
 * expired on `clock`, or the claimant already holds it (a renewal). A new owner gets the next
 * epoch. The write is a compare-and-set, so of two racing claimants exactly one wins.
 */
export async function claimRun(store: RunStore, runId: string, options: ClaimOptions & { clock: Clock }): Promise<StoredRun> {
  const current = await store.load(runId, { signal: options.signal })
  if (current === undefined) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
  const { checkpoint } = claimedCheckpoint(current, options)
  // Unsynced: a claim lost to a power loss only means the run is claimed again (nothing ran on it
  // yet; its first side effect or wait is a synced write, which makes the claim durable too).
  const revision = await store.save(checkpoint, { revision: current.revision, sync: false, signal: options.signal })
  return { checkpoint, revision }
}

/**
 * What a claim of `current` writes (the rule of `claimRun`, for a store that writes it its own
 * way): the checkpoint with the claimant's lease, and whether it renews the claimant's own lease.
 * Throws `RUN_REVISION_CONFLICT` when `current` is not at the revision asked for, `RUN_LEASE_HELD`
 * when another owner's lease still runs.
 */
export function claimedCheckpoint(
  current: StoredRun,
  options: ClaimOptions & { clock: Clock },
): { checkpoint: Checkpoint; renewal: boolean } {
  const { runId } = current.checkpoint
  if (options.revision !== undefined && options.revision !== current.revision) {
    throw new RunStoreError('RUN_REVISION_CONFLICT', runId, `expected revision ${options.revision}, found ${current.revision}.`, {
      expected: options.revision,
      actual: current.revision,
    })
  }
  const now = options.clock.now()
  const { lease } = current.checkpoint
  const renewal = lease?.owner === options.owner
  if (lease !== undefined && !renewal && lease.expiresAt > now) {
    throw new RunStoreError(
      'RUN_LEASE_HELD',
      runId,
      `owned by "${lease.owner}" until ${new Date(lease.expiresAt).toISOString()}.`,
      {
        owner: lease.owner,
        expiresAt: lease.expiresAt,
      },
    )
  }
  const epoch = renewal ? lease.epoch : (lease?.epoch ?? 0) + 1
  const checkpoint: Checkpoint = {
    ...current.checkpoint,
    lease: { owner: options.owner, epoch, expiresAt: now + options.leaseMs },
    savedAt: now,
  }
  return { checkpoint, renewal }
}

/**
 * Parks a run that cannot be continued (its transcript has a gap, its snapshot cannot be
 * restored): status `parked` with the reason, no lease, so no host claims it again; it stays
 * listed (`signalbox runs`) until a person deletes or prunes it. A compare-and-set at `revision`
 * (the caller's claim): if someone wrote since, nothing is parked and the conflict is thrown.
 */
export async function parkRun(
  store: RunStore,
  run: StoredRun,
  options: { reason: { code: string; message: string }; by: string; clock: Clock; signal: AbortSignal },
): Promise<StoredRun> {
  const now = options.clock.now()
  const { lease: _lease, ...rest } = run.checkpoint
  const checkpoint: Checkpoint = {
    ...rest,
    status: 'parked',
    parked: {
      code: options.reason.code.slice(0, 64) || 'UNKNOWN_ERROR',
      message: options.reason.message.slice(0, 4096),
      by: options.by,
      at: now,
    },
    savedAt: now,
  }
  const revision = await store.save(checkpoint, { revision: run.revision, signal: options.signal })
  return { checkpoint, revision }
}

/** Run ids pass through safely as keys; anything else is base64url with a `=` prefix (one home for keys). */
export function runKey(runId: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (runId.length === 0 || runId.length > 256 || /[\x00-\x1f\x7f]/.test(runId)) {
    throw new RunStoreError('RUN_ID_INVALID', runId.slice(0, 80), 'a run id must be 1-256 characters without control characters.')
  }
  if (/^[A-Za-z0-9_-]{1,128}$/.test(runId)) return runId
  const key = `=${Buffer.from(runId, 'utf8').toString('base64url')}`
  // File names stop at 255 bytes; keep keys well under.
  if (key.length > 200) throw new RunStoreError('RUN_ID_INVALID', runId.slice(0, 80), 'this run id is too long to be stored.')
  return key
}

/** The run id behind a key made by `runKey`. */
export function runIdOfKey(key: string): string {
  return key.startsWith('=') ? Buffer.from(key.slice(1), 'base64url').toString('utf8') : key
}

export function matchesListing(checkpoint: Checkpoint, options: ListRunsOptions): boolean {
  if (options.status !== undefined && !options.status.includes(checkpoint.status)) return false
  return options.agentId === undefined || options.agentId === checkpoint.agentId
}
