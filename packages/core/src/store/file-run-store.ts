import { randomBytes } from 'node:crypto'
import { closeSync, constants, fdatasync as fdatasyncCallback, fstatSync, fsync as fsyncCallback, unlinkSync } from 'node:fs'
import { mkdir, open, readdir, rename, rm } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import { type Clock, systemClock } from '../clock.ts'
import type { Message } from '../messages.ts'
import type { Checkpoint, StoredRun } from './checkpoint.ts'
import { decodeCheckpoint, encodeCheckpoint } from './codec.ts'
import { CommitLog, recoverCommitLogs } from './commit-log.ts'
import { CheckpointError, RunStoreError } from './errors.ts'
import {
  type AppendMessagesOptions,
  assembleTranscript,
  type MessageBatch,
  type MessagesToAppend,
  parseBatch,
} from './message-log.ts'
import {
  completeSeal,
  isCode,
  logName,
  openIfExists,
  publishFile,
  readAll,
  readRange,
  readRunDir,
  transcriptName,
  writeAll,
} from './run-dir.ts'
import { checkpointRecord, emptyChain, messagesRecord, RUN_LOG_HEADER, scanLog } from './run-log.ts'
import { type KnownLog, type OpenLog, RunLogs } from './run-logs.ts'
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
  /**
   * When a run's log is compacted (sealed and continued in a fresh one that starts with its newest
   * checkpoint): once it holds this many bytes, or this many checkpoints, whichever comes first.
   * Default 256 KiB and no checkpoint count: a load reads at most about that much, however long
   * the run, and a short run is never compacted.
   */
  compactAfter?: { checkpoints?: number; bytes?: number }
  /**
   * Group commit (with `fsync`; default true): a synced write waits for a flush of this store's
   * commit log, shared by every run this store writes, instead of a flush of its run's log (see
   * `commit-log.ts`). false: each synced write flushes its run's log.
   */
  groupCommit?: boolean
}

/**
 * The embedded run store: a directory, no server. Per run, `<dir>/<run>/` holds an append-only
 * log of its checkpoints and message batches (format and compare-and-set rule in `run-log.ts`,
 * compaction in `run-dir.ts`). A save appends one record to the file that already exists, and a
 * synced save syncs that one file: one fsync, no new file, no directory entry. A stale owner's
 * append (a revision another process wrote first) is skipped by every reader and its writer gets
 * `RUN_REVISION_CONFLICT`. No lock file, so a process killed at any point leaves nothing to clean
 * up, only at worst a torn last record, which readers skip. Needs a local POSIX file system
 * (`O_APPEND` atomic across processes, `link(2)` exclusive); not NFS.
 */
export class FileRunStore implements RunStore {
  readonly #directory: string
  readonly #clock: Clock
  readonly #fsync: boolean
  readonly #compactCheckpoints: number
  readonly #compactBytes: number
  /** Tells this process's records apart from any other writer's in a log it reads back. */
  readonly #writerPrefix = randomBytes(6).toString('hex')
  #writes = 0
  /** Per run directory, what this process knows of the run's current log. */
  /** What this store knows of each run's current log, and the logs it keeps open. */
  readonly #logs = new RunLogs()
  readonly #commitLog: CommitLog | undefined
  /** Commit logs of other processes, written back before this store reads or writes anything. */
  #recovered: Promise<void> | undefined

  constructor(options: FileRunStoreOptions) {
    this.#directory = path.resolve(options.directory)
    this.#clock = options.clock ?? systemClock
    this.#fsync = options.fsync ?? true
    this.#compactCheckpoints = Math.max(2, options.compactAfter?.checkpoints ?? Number.POSITIVE_INFINITY)
    this.#compactBytes = Math.max(1024, options.compactAfter?.bytes ?? 256 * 1024)
    this.#commitLog =
      this.#fsync && options.groupCommit !== false
        ? new CommitLog({
            directory: this.#directory,
            writer: this.#writerPrefix,
            syncDirectory: () => syncPath(this.#directory),
          })
        : undefined
  }

  /** Runs once, before this store's first read or write. */
  #ready(): Promise<void> {
    if (this.#recovered === undefined) {
      this.#recovered = recoverCommitLogs(this.#directory, (name) => this.#commitLog?.owns(name) ?? false)
      this.#recovered.catch(() => {
        this.#recovered = undefined
      })
    }
    return this.#recovered
  }

  async create(checkpoint: Checkpoint, options: { signal: AbortSignal }): Promise<number> {
    options.signal.throwIfAborted()
    await this.#ready()
    const runId = checkpoint.runId
    const record = checkpointRecord(1, this.#nextWriter(), encodeCheckpoint(checkpoint))
    const dir = this.#runDir(runId)
    await mkdir(dir, { recursive: true })
    if (this.#fsync) await syncPath(this.#directory)
    const exists = () => {
      try {
        return (readRunDir(runId, dir)?.logs.length ?? 0) > 0
      } catch (error) {
        if (CheckpointError.is(error)) return true // stored by an older signalbox
        throw error
      }
    }
    if (exists()) throw conflict(runId, 0, 0)
    options.signal.throwIfAborted()
    // Published whole or not at all: written and synced under a temp name, then linked (which
    // fails if the run exists: link never replaces).
    const content = Buffer.concat([Buffer.from(RUN_LOG_HEADER), record.bytes])
    if (!(await publishFile(dir, logName(1), content, (fd) => this.#syncFile(fd)))) throw conflict(runId, 0, 0)
    const files = readRunDir(runId, dir)
    if (files?.logs.some((generation) => generation > 1)) {
      // The run existed, compacted past its first log: this one must not stand beside it.
      unlinkSync(path.join(dir, logName(1)))
      throw conflict(runId, 0, 0)
    }
    this.#logs.forget(dir)
    if (this.#fsync) await syncPath(dir)
    // Its content is synced (and was written by this store): its next synced write can use the commit log.
    this.#logs.open(runId, dir, false, (log) => {
      if (log.generation === 1 && log.known.chain.revision === 1) log.known.unsynced = false
    })
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
    await this.#ready()
    const runId = checkpoint.runId
    const expected = options.revision
    const sync = this.#fsync && options.sync !== false
    const json = Buffer.from(encodeCheckpoint(checkpoint), 'utf8')
    const dir = this.#runDir(runId)
    for (;;) {
      const log = this.#logs.open(runId, dir, true)
      if (log === undefined) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
      const { fd, known, stat: before } = log
      try {
        if (known.chain.sealed) {
          // Compacted by someone who did not finish: finish it, then write to the next log.
          await this.#completeSeal(runId, dir, log)
          continue
        }
        if (known.chain.revision !== expected) throw conflict(runId, expected, known.chain.revision)
        options.signal.throwIfAborted()
        const seal = known.chain.checkpoints >= this.#compactCheckpoints || before.size >= this.#compactBytes
        const writer = this.#nextWriter()
        const record = checkpointRecord(expected + 1, writer, json, seal)
        const parts = batch ? [messagesRecord(JSON.stringify(batch)), record.bytes] : [record.bytes]
        // A torn last line (a writer killed mid-append) is ended first, so this record is a line of its own.
        if (before.size > known.chain.scanned) parts.unshift(Buffer.from('\n'))
        const bytes = parts.length === 1 ? record.bytes : Buffer.concat(parts)
        writeAll(fd, bytes)
        const after = fstatSync(fd)
        let entry: number | undefined
        if (after.size === before.size + bytes.byteLength && before.size === known.chain.scanned) {
          // Nothing else was appended since this process last read the log, nor during the write: the
          // record is the next line after the chain's newest, so it is revision expected + 1.
          entry = this.#commitLog?.record(`${runKey(runId)}/${logName(log.generation)}`, known.file, before.size, bytes)
          const offset = after.size - record.bytes.byteLength + record.payload
          known.chain = {
            revision: expected + 1,
            latest: { offset, length: after.size - 1 - offset, writer },
            checkpoints: known.chain.checkpoints + 1,
            sealed: seal,
            scanned: after.size,
          }
        } else {
          let mine = false
          known.chain = scanLog(runId, readRange(fd, known.chain.scanned, after.size), known.chain, {
            onCheckpoint: (w) => {
              if (w === writer) mine = true
            },
          })
          known.unsynced = true
          if (!mine) throw conflict(runId, expected, known.chain.revision)
        }
        // Compacted now: the next log is published synced (it holds this checkpoint).
        if (seal) await this.#completeSeal(runId, dir, log)
        else if (sync) await this.#durable(fd, known, entry)
        return expected + 1
      } finally {
        log.close()
      }
    }
  }

  async load(runId: string, options: { signal: AbortSignal }): Promise<StoredRun | undefined> {
    options.signal.throwIfAborted()
    await this.#ready()
    const dir = this.#runDir(runId)
    const log = this.#logs.open(runId, dir, false)
    if (log === undefined) return undefined
    try {
      const { chain } = log.known
      if (chain.latest === undefined) {
        throw new CheckpointError(
          'CHECKPOINT_TRUNCATED',
          runId,
          `the run log holds no complete checkpoint (${log.stat.size} bytes).`,
          { details: { size: log.stat.size } },
        )
      }
      const payload = readRange(log.fd, chain.latest.offset, chain.latest.offset + chain.latest.length)
      return { checkpoint: decodeCheckpoint(runId, payload), revision: chain.revision }
    } finally {
      log.close()
    }
  }

  async list(options: ListRunsOptions): Promise<RunListing> {
    await this.#ready()
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
    await this.#ready()
    const batch: MessageBatch = { from: options.from, epoch: options.epoch, messages: options.messages }
    const record = messagesRecord(JSON.stringify(batch))
    const dir = this.#runDir(runId)
    const sync = this.#fsync && options.sync !== false
    for (;;) {
      const log = this.#logs.open(runId, dir, true)
      if (log === undefined) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
      const { fd, known, stat: before } = log
      try {
        if (known.chain.sealed) {
          await this.#completeSeal(runId, dir, log)
          continue
        }
        const torn = before.size > known.chain.scanned
        writeAll(fd, torn ? Buffer.concat([Buffer.from('\n'), record]) : record)
        const after = fstatSync(fd)
        let entry: number | undefined
        if (after.size === before.size + record.byteLength + (torn ? 1 : 0) && !torn) {
          // Nothing else was appended: the batch is the next line, before any seal.
          entry = this.#commitLog?.record(`${runKey(runId)}/${logName(log.generation)}`, known.file, before.size, record)
          known.chain = { ...known.chain, scanned: after.size }
        } else {
          known.unsynced = true
          let counted = false
          known.chain = scanLog(runId, readRange(fd, known.chain.scanned, after.size), known.chain, {
            onBatch: (_payload, line) => {
              if (line.equals(record)) counted = true
            },
          })
          // Appended after a seal: it belongs in the next log.
          if (!counted) continue
        }
        if (sync) await this.#durable(fd, known, entry)
        return
      } finally {
        log.close()
      }
    }
  }

  async readMessages(runId: string, options: { length: number; signal: AbortSignal }): Promise<Message[]> {
    options.signal.throwIfAborted()
    await this.#ready()
    const dir = this.#runDir(runId)
    for (;;) {
      const files = readRunDir(runId, dir)
      const generation = files?.logs.at(-1)
      if (files === undefined || generation === undefined) {
        throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
      }
      const fd = openIfExists(path.join(dir, logName(generation)), constants.O_RDONLY)
      // Compacted meanwhile: list again.
      if (fd === undefined) continue
      const batches: MessageBatch[] = []
      const collect = (payload: Buffer) => {
        const batch = parseBatch(runId, payload.toString('utf8'))
        if (batch === undefined) {
          throw new CheckpointError('CHECKPOINT_INVALID_JSON', runId, 'a message-log entry is not valid JSON.', {
            details: { sample: payload.toString('utf8', 0, 200) },
          })
        }
        batches.push(batch)
      }
      try {
        // The transcript files of the logs before this one, then this log's own batches, in write order.
        for (const older of files.transcripts.filter((g) => g <= generation)) {
          const tfd = openIfExists(path.join(dir, transcriptName(older)), constants.O_RDONLY)
          if (tfd === undefined) continue
          try {
            scanLog(runId, readAll(tfd), emptyChain(), { onBatch: collect })
          } finally {
            closeSync(tfd)
          }
        }
        scanLog(runId, readAll(fd), emptyChain(), { onBatch: collect })
      } finally {
        closeSync(fd)
      }
      return assembleTranscript(runId, batches, options.length)
    }
  }

  async delete(runId: string, options: { signal: AbortSignal }): Promise<void> {
    options.signal.throwIfAborted()
    await this.#ready()
    const dir = this.#runDir(runId)
    // Rename first (atomic), so a reader never sees half a deleted run; then remove at leisure.
    const trash = path.join(this.#directory, `.deleted-${randomBytes(6).toString('hex')}`)
    try {
      await rename(dir, trash)
    } catch (error) {
      if (isCode(error, 'ENOENT')) return
      throw error
    }
    this.#logs.forgetRun(dir)
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
   * The run's current log, open, with what this process knows of it brought up to date (only what
   * was appended since it last read it is read). Undefined when the run has no log. A log
   * compacted away meanwhile is followed to its successor.
   */
  /**
   * Makes a synced write durable: the flush of the commit log that covers its entry, or, when the
   * log holds bytes this store did not commit itself (or the write has no entry), a flush of the
   * run's log, which covers everything in it.
   */
  async #durable(fd: number, known: KnownLog, entry: number | undefined): Promise<void> {
    if (entry !== undefined && !known.unsynced && this.#commitLog) return this.#commitLog.flush(entry)
    await fdatasync(fd)
    known.unsynced = false
  }

  /** Publishes the successor of a sealed log (synced when this store syncs: it holds the run's newest checkpoint). */
  async #completeSeal(runId: string, dir: string, log: OpenLog): Promise<void> {
    await completeSeal(runId, dir, log.generation, log.fd, log.known.chain, {
      file: (fd) => this.#syncFile(fd),
      dir: (dir) => (this.#fsync ? syncPath(dir) : Promise.resolve()),
    })
    log.forget()
    this.#logs.forget(dir)
  }

  #syncFile(fd: number): Promise<void> {
    return this.#fsync ? fsync(fd) : Promise.resolve()
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

const fsync = promisify(fsyncCallback)
// The log only grows: fdatasync syncs its data and its size, not its times (one journal commit).
const fdatasync = promisify(fdatasyncCallback)

/** Makes a directory's entries (a new file, a rename) durable. */
async function syncPath(file: string): Promise<void> {
  const handle = await open(file, 'r')
  try {
    await handle.sync()
  } finally {
    await handle.close()
  }
}
