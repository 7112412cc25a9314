import { randomBytes } from 'node:crypto'
import {
  closeSync,
  existsSync,
  fstatSync,
  fsync as fsyncCallback,
  linkSync,
  openSync,
  readSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { mkdir, open, readdir, readFile, rename, rm, stat, truncate } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { type Clock, systemClock } from '../clock.ts'
import type { Message } from '../messages.ts'
import type { Checkpoint, StoredRun } from './checkpoint.ts'
import { decodeCheckpoint, encodeCheckpoint } from './codec.ts'
import { CheckpointError, RunStoreError } from './errors.ts'
import { type AppendMessagesOptions, assembleTranscript, type MessageBatch, parseBatch } from './message-log.ts'
import {
  type ClaimOptions,
  claimRun,
  type ListRunsOptions,
  matchesListing,
  type RunListing,
  type RunStore,
  runIdOfKey,
  runKey,
  type SaveOptions,
} from './run-store.ts'

export interface FileRunStoreOptions {
  /** The directory that holds one sub-directory per run; created when missing. */
  directory: string
  clock?: Clock
  /**
   * fsync every write (files and directories) before it counts as done. Default true: a saved
   * checkpoint survives a power loss. With false, writes are still atomic and survive the death of
   * the process (SIGKILL), not of the machine, at a fraction of the cost.
   */
  fsync?: boolean
}

const REVISION_FILE = /^rev-(\d{1,15})\.json$/
const MESSAGES_FILE = 'messages.jsonl'

/**
 * The embedded run store: a directory, no server. Per run, `<dir>/<run>/rev-<n>.json` holds
 * the checkpoint at revision n and `messages.jsonl` the append-only transcript log.
 *
 * Compare-and-set without locks: revision n+1 is written to a temp file, fsynced, then published
 * with `link(temp, rev-<n+1>.json)`, which fails with EEXIST if any process published n+1 first
 * (link never replaces, unlike rename). Of two racing writers exactly one wins, across processes,
 * and a writer killed at any point leaves no lock behind (a lock file would need stale-lock
 * breaking, itself racy), only an unpublished temp file. A revision name is never used twice:
 * revisions older than the previous one are emptied, not removed (a removed name could be linked
 * again by a writer holding a stale revision). Loads read the highest. Needs a local POSIX file
 * system (link(2) atomic and exclusive); not NFS.
 */
export class FileRunStore implements RunStore {
  readonly #directory: string
  readonly #clock: Clock
  readonly #fsync: boolean
  /** Runs whose message log this process already checked for a torn last line. */
  readonly #logsChecked = new Set<string>()
  /** Runs whose message log has appends not yet fsynced: the next synced commit syncs it first. */
  readonly #unsyncedLogs = new Set<string>()

  constructor(options: FileRunStoreOptions) {
    this.#directory = path.resolve(options.directory)
    this.#clock = options.clock ?? systemClock
    this.#fsync = options.fsync ?? true
  }

  async create(checkpoint: Checkpoint, options: { signal: AbortSignal }): Promise<number> {
    const data = encodeCheckpoint(checkpoint)
    const dir = this.#runDir(checkpoint.runId)
    await mkdir(dir, { recursive: true })
    if (this.#fsync) await fsyncDirectory(this.#directory)
    return this.#commit(checkpoint.runId, data, 0, options.signal, this.#fsync)
  }

  async save(checkpoint: Checkpoint, options: SaveOptions): Promise<number> {
    const sync = this.#fsync && options.sync !== false
    return this.#commit(checkpoint.runId, encodeCheckpoint(checkpoint), options.revision, options.signal, sync)
  }

  async load(runId: string, options: { signal: AbortSignal }): Promise<StoredRun | undefined> {
    const dir = this.#runDir(runId)
    for (let attempt = 0; ; attempt++) {
      options.signal.throwIfAborted()
      const revisions = await listRevisions(dir)
      const revision = revisions.at(-1)
      if (revision === undefined) return undefined
      let data = await readFile(path.join(dir, revisionFile(revision)), { signal: options.signal })
      // Emptied by two newer commits between listing and reading: list again.
      if (data.byteLength === 0 && attempt < 10 && ((await listRevisions(dir)).at(-1) ?? 0) > revision) continue
      // Still empty: an unsynced revision a power loss cut off (its name reached the disk, its data
      // did not). The newest revision with data is the run; the CAS token stays the highest name.
      for (let older = revisions.length - 2; data.byteLength === 0 && older >= 0; older--) {
        data = await readFile(path.join(dir, revisionFile(revisions[older] as number)), { signal: options.signal })
      }
      return { checkpoint: decodeCheckpoint(runId, data), revision }
    }
  }

  async list(options: ListRunsOptions): Promise<RunListing> {
    const listing: RunListing = { runs: [], errors: [] }
    let entries: string[]
    try {
      entries = await readdir(this.#directory)
    } catch (error) {
      if (isCode(error, 'ENOENT')) return listing
      throw error
    }
    for (const entry of entries.sort()) {
      if (entry.startsWith('.')) continue
      try {
        const stored = await this.load(runIdOfKey(entry), { signal: options.signal })
        if (stored !== undefined && matchesListing(stored.checkpoint, options)) listing.runs.push(stored)
      } catch (error) {
        if (!(error instanceof CheckpointError)) throw error
        listing.errors.push(error)
      }
    }
    return listing
  }

  claim(runId: string, options: ClaimOptions): Promise<StoredRun> {
    return claimRun(this, runId, { ...options, clock: this.#clock })
  }

  async appendMessages(runId: string, options: AppendMessagesOptions): Promise<void> {
    options.signal.throwIfAborted()
    const dir = this.#runDir(runId)
    if (!existsSync(dir)) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
    const batch: MessageBatch = { from: options.from, epoch: options.epoch, messages: options.messages }
    let line = `${JSON.stringify(batch)}\n`
    // Small writes to the page cache are synchronous calls (microseconds; a thread-pool round trip
    // per call cost more than the write itself); only fsync goes to the pool.
    const fd = openSync(path.join(dir, MESSAGES_FILE), 'a+')
    try {
      if (!this.#logsChecked.has(dir)) {
        // A process killed mid-append may have left a partial last line: end it, so this batch
        // starts on its own line (the fragment is then skipped as a torn write).
        const { size } = fstatSync(fd)
        if (size > 0) {
          const last = Buffer.alloc(1)
          readSync(fd, last, 0, 1, size - 1)
          if (last[0] !== 0x0a) line = `\n${line}`
        }
        this.#logsChecked.add(dir)
      }
      writeAll(fd, line)
      if (this.#fsync && options.sync !== false) {
        await fsyncFd(fd)
        this.#unsyncedLogs.delete(dir)
      } else if (this.#fsync) this.#unsyncedLogs.add(dir)
    } finally {
      closeSync(fd)
    }
  }

  async readMessages(runId: string, options: { length: number; signal: AbortSignal }): Promise<Message[]> {
    let text = ''
    try {
      text = await readFile(path.join(this.#runDir(runId), MESSAGES_FILE), { encoding: 'utf8', signal: options.signal })
    } catch (error) {
      if (!isCode(error, 'ENOENT')) throw error
    }
    const batches: MessageBatch[] = []
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue
      const batch = parseBatch(runId, line)
      if (batch !== undefined) batches.push(batch)
    }
    return assembleTranscript(runId, batches, options.length)
  }

  async delete(runId: string, options: { signal: AbortSignal }): Promise<void> {
    options.signal.throwIfAborted()
    const dir = this.#runDir(runId)
    // Rename first (atomic), so a reader never sees half a deleted run; then remove at leisure.
    const trash = path.join(this.#directory, `.deleted-${randomBytes(6).toString('hex')}`)
    try {
      await rename(dir, trash)
    } catch (error) {
      if (isCode(error, 'ENOENT')) return
      throw error
    }
    this.#logsChecked.delete(dir)
    this.#unsyncedLogs.delete(dir)
    if (this.#fsync) await fsyncDirectory(this.#directory)
    await rm(trash, { recursive: true, force: true })
  }

  #runDir(runId: string): string {
    return path.join(this.#directory, runKey(runId))
  }

  async #commit(runId: string, data: string, expected: number, signal: AbortSignal, sync: boolean): Promise<number> {
    signal.throwIfAborted()
    const dir = this.#runDir(runId)
    if (expected > 0 && !existsSync(path.join(dir, revisionFile(expected)))) {
      // Never written here: the run is gone, or was deleted and created anew since it was read.
      const current = (await listRevisions(dir)).at(-1)
      if (current === undefined) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
      throw conflict(runId, expected, current)
    }
    const next = expected + 1
    // The messages this checkpoint counts are durable before it is published. Both fsyncs run at
    // once: the file system can commit them together (one journal commit instead of two).
    const logSynced = sync && this.#unsyncedLogs.has(dir) ? syncFile(path.join(dir, MESSAGES_FILE)) : undefined
    logSynced?.catch(() => {})
    const temp = path.join(dir, `.tmp-${randomBytes(8).toString('hex')}`)
    const fd = openSync(temp, 'wx')
    try {
      writeAll(fd, data)
      if (sync) await fsyncFd(fd)
    } finally {
      closeSync(fd)
    }
    if (logSynced) {
      await logSynced
      this.#unsyncedLogs.delete(dir)
    }
    try {
      signal.throwIfAborted()
      linkSync(temp, path.join(dir, revisionFile(next)))
    } catch (error) {
      if (isCode(error, 'EEXIST')) throw conflict(runId, expected, (await listRevisions(dir)).at(-1) ?? next)
      throw error
    } finally {
      try {
        unlinkSync(temp)
      } catch {
        // A leftover temp file is harmless (never read).
      }
    }
    if (!sync) return next
    await fsyncDirectory(dir)
    // Keep this revision and the previous one readable; empty the ones before (their names stay).
    // Only once this one is synced: until then the last synced revision is what a power loss leaves.
    await emptyOlder(dir, next - 2)
    return next
  }
}

function conflict(runId: string, expected: number, actual: number): RunStoreError {
  return new RunStoreError(
    'RUN_REVISION_CONFLICT',
    runId,
    expected === 0 ? 'the run already exists.' : `expected revision ${expected}, found ${actual}.`,
    {
      expected,
      actual,
    },
  )
}

const revisionFile = (revision: number) => `rev-${revision}.json`

const fsyncFd = promisify(fsyncCallback)

/** `writeSync` until every byte is written. */
function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8')
  for (let offset = 0; offset < bytes.byteLength; ) offset += writeSync(fd, bytes, offset)
}

/** Empties revision `from` and the ones below it that still hold data (unsynced commits left them). */
async function emptyOlder(dir: string, from: number): Promise<void> {
  for (let revision = from; revision >= 1; revision--) {
    const file = path.join(dir, revisionFile(revision))
    const size = await stat(file).then(
      (s) => s.size,
      () => 0,
    )
    if (size === 0) return
    await truncate(file).catch(() => {})
  }
}

/** Revision numbers present in a run directory, ascending; [] when the directory is missing. */
async function listRevisions(dir: string): Promise<number[]> {
  let entries: string[]
  try {
    entries = await readdir(dir)
  } catch (error) {
    if (isCode(error, 'ENOENT')) return []
    throw error
  }
  const revisions: number[] = []
  for (const entry of entries) {
    const match = REVISION_FILE.exec(entry)
    if (match) revisions.push(Number(match[1]))
  }
  return revisions.sort((a, b) => a - b)
}

/** Makes a directory entry (a new file, a rename) durable: fsync the directory itself. */
async function fsyncDirectory(dir: string): Promise<void> {
  await syncFile(dir)
}

async function syncFile(file: string): Promise<void> {
  const handle = await open(file, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}

function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code
}
