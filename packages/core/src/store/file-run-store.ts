import { randomBytes } from 'node:crypto'
import {
  closeSync,
  constants,
  fdatasync as fdatasyncCallback,
  fstatSync,
  fsync as fsyncCallback,
  linkSync,
  openSync,
  readSync,
  type Stats,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { type Clock, systemClock } from '../clock.ts'
import type { Message } from '../messages.ts'
import type { Checkpoint, StoredRun } from './checkpoint.ts'
import { decodeCheckpoint, encodeCheckpoint } from './codec.ts'
import { CheckpointError, RunStoreError } from './errors.ts'
import { endsWithNewline, hasLegacyRevisions, LEGACY_MESSAGES_FILE, loadLegacyRun, readLegacyBatches } from './legacy-run-dir.ts'
import {
  type AppendMessagesOptions,
  assembleTranscript,
  type MessageBatch,
  type MessagesToAppend,
  parseBatch,
} from './message-log.ts'
import { checkpointRecord, emptyChain, type LogChain, messagesRecord, RUN_LOG_HEADER, scanLog } from './run-log.ts'
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
   * fsync synced writes before they count as done. Default true: a synced checkpoint survives a
   * power loss. With false, writes are still atomic and survive the death of the process
   * (SIGKILL), not of the machine, at a fraction of the cost.
   */
  fsync?: boolean
}

const LOG_FILE = 'run.log'

/**
 * The embedded run store: a directory, no server. Per run, `<dir>/<run>/run.log` is an
 * append-only log of its checkpoints and message batches (format and compare-and-set rule in
 * `run-log.ts`). A save appends one record to the file that already exists, and a synced save
 * syncs that one file: one fsync, no new file, no directory entry. A stale owner's append (a
 * revision another process wrote first) is skipped by every reader and its writer gets
 * `RUN_REVISION_CONFLICT`. No lock file, so a process killed at any point leaves nothing to clean
 * up, only at worst a torn last record, which readers skip. Needs a local POSIX file system
 * (`O_APPEND` atomic across processes, `link(2)` exclusive); not NFS.
 *
 * Runs stored by the first layout (a file per revision) still load and resume: their first write
 * moves them into a run log (`legacy-run-dir.ts`).
 */
export class FileRunStore implements RunStore {
  readonly #directory: string
  readonly #clock: Clock
  readonly #fsync: boolean
  /** Tells this process's records apart from any other writer's in a log it reads back. */
  readonly #writerPrefix = randomBytes(6).toString('hex')
  #writes = 0
  /** Per run log, what this process last read or wrote of it, and of which file (see `fileIdentity`). */
  readonly #chains = new Map<string, { file: string; chain: LogChain }>()

  constructor(options: FileRunStoreOptions) {
    this.#directory = path.resolve(options.directory)
    this.#clock = options.clock ?? systemClock
    this.#fsync = options.fsync ?? true
  }

  async create(checkpoint: Checkpoint, options: { signal: AbortSignal }): Promise<number> {
    options.signal.throwIfAborted()
    const runId = checkpoint.runId
    const writer = this.#nextWriter()
    const record = checkpointRecord(1, writer, encodeCheckpoint(checkpoint))
    const dir = this.#runDir(runId)
    await mkdir(dir, { recursive: true })
    if (this.#fsync) await syncPath(this.#directory)
    if (await hasLegacyRevisions(dir)) throw conflict(runId, 0, 0)
    // Published whole or not at all: written and synced under a temp name, then linked (which
    // fails if the run exists: link never replaces).
    await this.#publish(runId, dir, Buffer.concat([Buffer.from(RUN_LOG_HEADER), record.bytes]), 0, this.#fsync, options.signal)
    return 1
  }

  save(checkpoint: Checkpoint, options: SaveOptions): Promise<number> {
    return this.#save(checkpoint, options, undefined)
  }

  /** The batch's record and the checkpoint's, appended in one write (see `RunStore.saveWithMessages`). */
  saveWithMessages(checkpoint: Checkpoint, options: SaveOptions & { messages: MessagesToAppend }): Promise<number> {
    const { from, epoch, messages } = options.messages
    return this.#save(checkpoint, options, { from, epoch, messages })
  }

  async #save(checkpoint: Checkpoint, options: SaveOptions, batch: MessageBatch | undefined): Promise<number> {
    options.signal.throwIfAborted()
    const runId = checkpoint.runId
    const expected = options.revision
    const sync = this.#fsync && options.sync !== false
    const writer = this.#nextWriter()
    const record = checkpointRecord(expected + 1, writer, encodeCheckpoint(checkpoint))
    const dir = this.#runDir(runId)
    const file = path.join(dir, LOG_FILE)
    const fd = openLog(file)
    if (fd === undefined) {
      if (batch) await this.appendMessages(runId, { ...batch, sync: false, signal: options.signal })
      return this.#migrate(runId, dir, record, expected, sync, options.signal)
    }
    try {
      const before = fstatSync(fd)
      const known = this.#chainOf(runId, file, fd, before)
      if (known.chain.revision !== expected) throw conflict(runId, expected, known.chain.revision)
      options.signal.throwIfAborted()
      const parts = batch ? [messagesRecord(JSON.stringify(batch)), record.bytes] : [record.bytes]
      // A torn last line (a writer killed mid-append) is ended first, so this record is a line of its own.
      if (before.size > known.chain.scanned) parts.unshift(Buffer.from('\n'))
      const bytes = parts.length === 1 ? record.bytes : Buffer.concat(parts)
      writeAll(fd, bytes)
      const after = fstatSync(fd)
      if (after.size === before.size + bytes.byteLength && before.size === known.chain.scanned) {
        // Nothing else was appended since this process last read the log, nor during the write: the
        // record is the next line after the chain's newest, so it is revision expected + 1.
        const offset = after.size - record.bytes.byteLength + record.payload
        known.chain = {
          revision: expected + 1,
          latest: { offset, length: after.size - 1 - offset, writer },
          scanned: after.size,
        }
      } else {
        let mine = false
        known.chain = scanLog(runId, readRange(fd, known.chain.scanned, after.size), known.chain, {
          onCheckpoint: (w) => {
            if (w === writer) mine = true
          },
        })
        if (!mine) throw conflict(runId, expected, known.chain.revision)
      }
      if (sync) await fdatasync(fd)
      return expected + 1
    } finally {
      closeSync(fd)
    }
  }

  async load(runId: string, options: { signal: AbortSignal }): Promise<StoredRun | undefined> {
    options.signal.throwIfAborted()
    const dir = this.#runDir(runId)
    const file = path.join(dir, LOG_FILE)
    const fd = openLog(file, constants.O_RDONLY)
    if (fd === undefined) return loadLegacyRun(runId, dir, options.signal)
    try {
      const stat = fstatSync(fd)
      const chain = scanLog(runId, readRange(fd, 0, stat.size), emptyChain())
      this.#chains.set(file, { file: fileIdentity(stat), chain })
      if (chain.latest === undefined) {
        throw new CheckpointError(
          'CHECKPOINT_TRUNCATED',
          runId,
          `the run log holds no complete checkpoint (${stat.size} bytes).`,
          { details: { size: stat.size } },
        )
      }
      const payload = readRange(fd, chain.latest.offset, chain.latest.offset + chain.latest.length)
      return { checkpoint: decodeCheckpoint(runId, payload), revision: chain.revision }
    } finally {
      closeSync(fd)
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
        if (!CheckpointError.is(error)) throw error
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
    const batch: MessageBatch = { from: options.from, epoch: options.epoch, messages: options.messages }
    const json = JSON.stringify(batch)
    const dir = this.#runDir(runId)
    const file = path.join(dir, LOG_FILE)
    const sync = this.#fsync && options.sync !== false
    const fd = openLog(file)
    if (fd === undefined) return this.#appendLegacy(runId, dir, json, sync)
    try {
      const before = fstatSync(fd)
      const known = this.#chainOf(runId, file, fd, before)
      const record = messagesRecord(json)
      const bytes = before.size > known.chain.scanned ? Buffer.concat([Buffer.from('\n'), record]) : record
      writeAll(fd, bytes)
      // A batch does not move the chain: only keep the fast path of the next save (nothing unread).
      const after = fstatSync(fd)
      if (after.size === before.size + bytes.byteLength && before.size === known.chain.scanned) {
        known.chain = { ...known.chain, scanned: after.size }
      }
      if (sync) await fdatasync(fd)
    } finally {
      closeSync(fd)
    }
  }

  async readMessages(runId: string, options: { length: number; signal: AbortSignal }): Promise<Message[]> {
    options.signal.throwIfAborted()
    const dir = this.#runDir(runId)
    const fd = openLog(path.join(dir, LOG_FILE), constants.O_RDONLY)
    if (fd === undefined) return assembleTranscript(runId, await readLegacyBatches(runId, dir, options.signal), options.length)
    const batches: MessageBatch[] = []
    try {
      scanLog(runId, readRange(fd, 0, fstatSync(fd).size), emptyChain(), {
        onBatch: (payload) => {
          const batch = parseBatch(runId, payload.toString('utf8'))
          if (batch === undefined) {
            throw new CheckpointError('CHECKPOINT_INVALID_JSON', runId, 'a message-log entry is not valid JSON.', {
              details: { sample: payload.toString('utf8', 0, 200) },
            })
          }
          batches.push(batch)
        },
      })
    } finally {
      closeSync(fd)
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
    this.#chains.delete(path.join(dir, LOG_FILE))
    if (this.#fsync) await syncPath(this.#directory)
    await rm(trash, { recursive: true, force: true })
  }

  #runDir(runId: string): string {
    return path.join(this.#directory, runKey(runId))
  }

  #nextWriter(): string {
    this.#writes++
    return `${this.#writerPrefix}.${this.#writes.toString(36)}`
  }

  /**
   * The chain of an open log as of `stat`: what this process knew of it, brought up to date by
   * reading only what was appended since (all of it when the file is new to this process or was
   * replaced: the run deleted and created anew).
   */
  #chainOf(runId: string, file: string, fd: number, stat: Stats): { file: string; chain: LogChain } {
    let known = this.#chains.get(file)
    const identity = fileIdentity(stat)
    if (known === undefined || known.file !== identity || known.chain.scanned > stat.size) {
      known = { file: identity, chain: emptyChain() }
      this.#chains.set(file, known)
    }
    if (stat.size > known.chain.scanned) {
      known.chain = scanLog(runId, readRange(fd, known.chain.scanned, stat.size), known.chain)
    }
    return known
  }

  /** Writes `content` as the run's log if there is none yet (temp file, synced, then linked). */
  async #publish(
    runId: string,
    dir: string,
    content: Buffer,
    expected: number,
    sync: boolean,
    signal: AbortSignal,
  ): Promise<void> {
    const file = path.join(dir, LOG_FILE)
    const temp = path.join(dir, `.tmp-${randomBytes(8).toString('hex')}`)
    const fd = openSync(temp, 'wx')
    try {
      writeAll(fd, content)
      if (sync) await fsync(fd)
    } finally {
      closeSync(fd)
    }
    try {
      signal.throwIfAborted()
      linkSync(temp, file)
    } catch (error) {
      if (!isCode(error, 'EEXIST')) throw error
      const fd = openLog(file, constants.O_RDONLY)
      let actual = expected + 1
      if (fd !== undefined) {
        try {
          actual = scanLog(runId, readRange(fd, 0, fstatSync(fd).size), emptyChain()).revision
        } catch {
          // Unreadable: the conflict is what this writer needs to know.
        } finally {
          closeSync(fd)
        }
      }
      throw conflict(runId, expected, actual)
    } finally {
      try {
        unlinkSync(temp)
      } catch {
        // A leftover temp file is harmless (never read).
      }
    }
    this.#chains.delete(file)
    if (sync) await syncPath(dir)
  }

  /**
   * The first write to a run of the first layout: its log is created holding the run's message
   * batches and this checkpoint (revision expected + 1), so the run goes on in the new layout.
   */
  async #migrate(
    runId: string,
    dir: string,
    record: { bytes: Buffer },
    expected: number,
    sync: boolean,
    signal: AbortSignal,
  ): Promise<number> {
    const stored = await loadLegacyRun(runId, dir, signal)
    if (stored === undefined) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
    if (stored.revision !== expected) throw conflict(runId, expected, stored.revision)
    const batches = await readLegacyBatches(runId, dir, signal)
    const content = Buffer.concat([
      Buffer.from(RUN_LOG_HEADER),
      ...batches.map((batch) => messagesRecord(JSON.stringify(batch))),
      record.bytes,
    ])
    await this.#publish(runId, dir, content, expected, sync, signal)
    return expected + 1
  }

  /** A batch for a run of the first layout not yet written to since (it joins its messages file). */
  async #appendLegacy(runId: string, dir: string, json: string, sync: boolean): Promise<void> {
    if (!(await hasLegacyRevisions(dir))) {
      throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
    }
    const file = path.join(dir, LEGACY_MESSAGES_FILE)
    const line = `${endsWithNewline(file) ? '' : '\n'}${json}\n`
    const fd = openSync(file, 'a')
    try {
      writeAll(fd, Buffer.from(line))
      if (sync) await fsync(fd)
    } finally {
      closeSync(fd)
    }
  }
}

/**
 * Which file a log is: its inode and its birth time, so a run deleted and created anew by another
 * process is never taken for the log this process read (a freed inode number is soon reused).
 */
function fileIdentity(stat: Stats): string {
  return `${stat.dev}:${stat.ino}:${stat.birthtimeMs}`
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

const fsync = promisify(fsyncCallback)
// The log only grows: fdatasync syncs its data and its size, not its times (one journal commit).
const fdatasync = promisify(fdatasyncCallback)

/**
 * Opens a run's log (appending, by default); undefined when it does not exist. Small reads and
 * writes of the page cache are synchronous calls (microseconds; a thread-pool round trip per call
 * cost more than the call itself); only the fsync goes to the pool.
 */
function openLog(file: string, flags = constants.O_RDWR | constants.O_APPEND): number | undefined {
  try {
    return openSync(file, flags)
  } catch (error) {
    if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return undefined
    throw error
  }
}

/** `writeSync` until every byte is written. */
function writeAll(fd: number, bytes: Buffer): void {
  for (let offset = 0; offset < bytes.byteLength; ) offset += writeSync(fd, bytes, offset)
}

/** The bytes of `[from, to)` (fewer if the file is shorter). */
function readRange(fd: number, from: number, to: number): Buffer {
  const bytes = Buffer.allocUnsafe(Math.max(0, to - from))
  let read = 0
  while (read < bytes.byteLength) {
    const n = readSync(fd, bytes, read, bytes.byteLength - read, from + read)
    if (n === 0) break
    read += n
  }
  return read === bytes.byteLength ? bytes : bytes.subarray(0, read)
}

/** Makes a file's data, or a directory's entries (a new file, a rename), durable. */
async function syncPath(file: string): Promise<void> {
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
