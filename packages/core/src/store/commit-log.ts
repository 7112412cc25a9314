import {
  closeSync,
  constants,
  fdatasync as fdatasyncCallback,
  fstatSync,
  openSync,
  readdirSync,
  unlinkSync,
  writeSync,
  writevSync,
} from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { fileIdentity, isCode, openIfExists, readAll, readRange, writeAll } from './run-dir.ts'

const fdatasync = promisify(fdatasyncCallback)

/** Commit logs are named `.commit-<pid>-<writer>` in the store's directory (skipped by listings: a dot). */
const COMMIT_LOG = /^\.commit-(\d+)-[0-9a-f]+$/
/** A commit log this long is replaced by a fresh one once the run logs it covers are synced. */
const ROTATE_BYTES = 64 * 1024 * 1024
/**
 * Flushes in flight at once: a write made while one flush runs starts the next at once instead of
 * waiting for it to end (the file system joins them in its journal), and no more pile up.
 */
const MAX_FLUSHES = 2
const NEWLINE = 0x0a

/**
 * Group commit for the file store. Every append a store makes to a run's log is also appended to
 * this process's commit log (which file, which file identity, at which offset, the same bytes),
 * and a synced write waits for an `fdatasync` of the commit log that covers its entry, not of the
 * run's log: one flush covers the writes of every run of the process made since the last one.
 * A flush starts at once for writes no flush in flight covers, two at most in flight (more wait
 * for one to end): a single run waits one flush, as before, and 200 runs share each flush.
 *
 * After a power loss, a run's log may have lost what was appended since it was last synced; the
 * commit logs still hold those bytes, synced. `recoverCommitLogs` (every store runs it before its
 * first read or write) writes them back at their offsets. Run logs are synced on their own when
 * the commit log is rotated, and before a process writes over bytes another process appended
 * (the store syncs such a log directly: another process's commit log may never be synced).
 */
export class CommitLog {
  readonly #directory: string
  readonly #writer: string
  #fd: number | undefined
  #size = 0
  /** Run logs with entries in the current commit log: synced before that commit log is removed. */
  #touched = new Map<string, string>()
  /** Entries appended so far, the newest a completed flush covered, and the newest a started one covers. */
  #written = 0
  #flushed = 0
  #covered = 0
  #inFlight = 0
  /** A commit log created since the last flush: its directory entry is synced with the flush. */
  #newFile = false
  /** Rotated out, not yet flushed: its fd, name and run logs. */
  #retired: { fd: number; name: string; touched: Map<string, string> }[] = []
  #waiters: { seq: number; resolve(): void; reject(error: unknown): void }[] = []
  #generation = 0
  readonly #syncDirectory: () => Promise<void>
  readonly #syncFile: (fd: number) => Promise<void>

  constructor(options: {
    directory: string
    writer: string
    syncDirectory(): Promise<void>
    /** How the commit log is flushed. Default `fdatasync`. */
    syncFile?(fd: number): Promise<void>
  }) {
    this.#directory = options.directory
    this.#writer = options.writer
    this.#syncDirectory = options.syncDirectory
    this.#syncFile = options.syncFile ?? fdatasync
  }

  /**
   * Records an append of `bytes` at `offset` of the run log `name` (relative to the store's
   * directory; its identity `identity`); returns its entry's number.
   */
  record(name: string, identity: string, offset: number, bytes: Buffer): number {
    if (this.#fd === undefined || this.#size > ROTATE_BYTES) this.#open()
    const header = Buffer.from(`W ${name} ${identity} ${offset} ${bytes.byteLength}\n`)
    writeBoth(this.#fd as number, header, bytes)
    this.#size += header.byteLength + bytes.byteLength
    this.#touched.set(name, identity)
    return ++this.#written
  }

  /** Resolves once a flush that started after entry `seq` was written has completed. */
  flush(seq: number): Promise<void> {
    if (seq <= this.#flushed) return Promise.resolve()
    const waiting = new Promise<void>((resolve, reject) => this.#waiters.push({ seq, resolve, reject }))
    this.#next()
    return waiting
  }

  /** Starts a flush for the writes no flush in flight covers, unless enough are in flight. */
  #next(): void {
    if (this.#inFlight >= MAX_FLUSHES) return
    if (!this.#waiters.some((waiter) => waiter.seq > this.#covered)) return
    void this.#flush()
  }

  async #flush(): Promise<void> {
    this.#inFlight++
    const upTo = this.#written
    this.#covered = upTo
    const retired = this.#retired
    this.#retired = []
    const newFile = this.#newFile
    this.#newFile = false
    let failure: unknown
    try {
      await Promise.all([
        ...retired.map((old) => this.#syncFile(old.fd)),
        ...(this.#fd === undefined ? [] : [this.#syncFile(this.#fd)]),
        ...(newFile ? [this.#syncDirectory()] : []),
      ])
      this.#flushed = Math.max(this.#flushed, upTo)
    } catch (error) {
      failure = error
      if (newFile) this.#newFile = true
      this.#retired.unshift(...retired)
    }
    this.#inFlight--
    const settled = failure === undefined ? this.#flushed : upTo
    const due = this.#waiters.filter((w) => w.seq <= settled)
    this.#waiters = this.#waiters.filter((w) => w.seq > settled)
    for (const waiter of due) {
      if (failure === undefined) waiter.resolve()
      else waiter.reject(failure)
    }
    // The next group: everything written meanwhile.
    this.#next()
    if (failure === undefined) for (const old of retired) void retire(this.#directory, old)
  }

  /** Whether a file in the store's directory is one of this log's (recovery leaves them alone). */
  owns(name: string): boolean {
    return name.startsWith(`.commit-${process.pid}-${this.#writer}`)
  }

  /** Starts a fresh commit log; the current one is retired once flushed and its run logs synced. */
  #open(): void {
    if (this.#fd !== undefined) {
      const name = this.#name
      this.#retired.push({ fd: this.#fd, name, touched: this.#touched })
      this.#touched = new Map()
    }
    this.#generation++
    const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_APPEND
    this.#fd = openSync(path.join(this.#directory, this.#name), flags)
    this.#size = 0
    this.#newFile = true
  }

  get #name(): string {
    return `.commit-${process.pid}-${this.#writer}${this.#generation.toString(16).padStart(4, '0')}`
  }
}

/** Syncs the run logs a flushed, rotated-out commit log covered, then removes it. */
async function retire(directory: string, old: { fd: number; name: string; touched: Map<string, string> }): Promise<void> {
  try {
    for (const [name, identity] of old.touched) {
      const fd = openIfExists(path.join(directory, name), constants.O_RDONLY)
      if (fd === undefined) continue
      try {
        if (fileIdentity(fstatSync(fd)) === identity) await fdatasync(fd)
      } finally {
        closeSync(fd)
      }
    }
    closeSync(old.fd)
    unlinkSync(path.join(directory, old.name))
  } catch {
    // Kept: recovery finds its entries present, and removes it once its process is gone.
  }
}

interface Entry {
  file: string
  identity: string
  offset: number
  bytes: Buffer
}

/**
 * Writes back into run logs what a power loss took from them: every entry of every commit log in
 * `directory` that its run log (the same file: same identity) lacks, at its offset; bytes before
 * it that no commit log holds (a write never acknowledged) become a blank line, which readers
 * skip. Then removes the commit logs of processes that are gone. Harmless when nothing was lost:
 * a live process's entries are in its run logs already.
 */
export async function recoverCommitLogs(directory: string, own: (name: string) => boolean): Promise<void> {
  let names: string[]
  try {
    names = readdirSync(directory).filter((name) => COMMIT_LOG.test(name) && !own(name))
  } catch (error) {
    if (isCode(error, 'ENOENT')) return
    throw error
  }
  if (names.length === 0) return
  const byFile = new Map<string, Entry[]>()
  for (const name of names) {
    const fd = openIfExists(path.join(directory, name), constants.O_RDONLY)
    if (fd === undefined) continue
    try {
      for (const entry of parseEntries(directory, readAll(fd))) {
        const list = byFile.get(entry.file) ?? []
        list.push(entry)
        byFile.set(entry.file, list)
      }
    } finally {
      closeSync(fd)
    }
  }
  for (const [file, entries] of byFile) await restore(file, entries)
  for (const name of names) {
    const pid = Number(COMMIT_LOG.exec(name)?.[1])
    if (!isAlive(pid)) {
      try {
        unlinkSync(path.join(directory, name))
      } catch {
        // another process removed it first
      }
    }
  }
}

function parseEntries(directory: string, bytes: Buffer): Entry[] {
  const entries: Entry[] = []
  for (let pos = 0; pos < bytes.byteLength; ) {
    const end = bytes.indexOf(NEWLINE, pos)
    if (end < 0) break
    const match = /^W (\S+) (\S+) (\d+) (\d+)$/.exec(bytes.toString('latin1', pos, end))
    if (!match) break
    const length = Number(match[4])
    if (end + 1 + length > bytes.byteLength) break // torn: the process died while writing it
    entries.push({
      file: path.join(directory, match[1] as string),
      identity: match[2] as string,
      offset: Number(match[3]),
      bytes: bytes.subarray(end + 1, end + 1 + length),
    })
    pos = end + 1 + length
  }
  return entries
}

async function restore(file: string, entries: Entry[]): Promise<void> {
  const fd = openIfExists(file, constants.O_RDWR)
  if (fd === undefined) return // compacted or deleted since: nothing to restore into
  try {
    const identity = fileIdentity(fstatSync(fd))
    let size = fstatSync(fd).size
    let wrote = false
    for (const entry of entries.filter((e) => e.identity === identity).sort((a, b) => a.offset - b.offset)) {
      const end = entry.offset + entry.bytes.byteLength
      if (end <= size) {
        // Present (a live process's entry, or restored already); unless a crash left zeros there
        // (a size that reached the disk before its data).
        const there = readRange(fd, entry.offset, end)
        if (there.equals(entry.bytes) || there.some((byte) => byte !== 0)) continue
        writeAt(fd, entry.bytes, entry.offset)
        wrote = true
        continue
      }
      if (size > entry.offset) {
        // Cut short: what is there must be the start of this entry.
        if (!readRange(fd, entry.offset, size).equals(entry.bytes.subarray(0, size - entry.offset))) continue
      } else if (size < entry.offset) {
        // Bytes nobody committed (never acknowledged): a blank line.
        const gap = Buffer.alloc(entry.offset - size, 0x20)
        gap[gap.byteLength - 1] = NEWLINE
        writeAt(fd, gap, size)
      }
      writeAt(fd, entry.bytes, entry.offset)
      size = end
      wrote = true
    }
    if (wrote) await fdatasync(fd)
  } finally {
    closeSync(fd)
  }
}

/** One entry, header and bytes, in one write (one syscall, no copy). */
function writeBoth(fd: number, header: Buffer, bytes: Buffer): void {
  const written = writevSync(fd, [header, bytes])
  const total = header.byteLength + bytes.byteLength
  if (written < total) writeAll(fd, Buffer.concat([header, bytes]).subarray(written))
}

function writeAt(fd: number, bytes: Buffer, position: number): void {
  for (let done = 0; done < bytes.byteLength; ) done += writeSync(fd, bytes, done, bytes.byteLength - done, position + done)
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return isCode(error, 'EPERM')
  }
}
