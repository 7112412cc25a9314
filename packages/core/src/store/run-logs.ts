import { closeSync, constants, existsSync, fstatSync, type Stats } from 'node:fs'
import path from 'node:path'
import { OpenFiles } from './open-files.ts'
import { fileIdentity, logName, openIfExists, readRange, readRunDir } from './run-dir.ts'
import { emptyChain, type LogChain, scanLog } from './run-log.ts'

/** A run's current log, open: its generation, what this process knows of it, and its size when opened. */
export interface OpenLog {
  fd: number
  generation: number
  stat: Stats
  known: KnownLog
  /** Gives the file back (kept open for the next write, or closed). */
  close(): void
  /** The file is done with (compacted away): closed when given back, not kept. */
  forget(): void
}

/** What this process last read or wrote of a run's current log, and of which file (see `fileIdentity`). */
export interface KnownLog {
  generation: number
  file: string
  chain: LogChain
  /**
   * The log holds bytes this store has not made durable itself (written before it first read the
   * log, or by another process since): its next synced write flushes the log, not the commit log.
   */
  unsynced: boolean
}

/**
 * The file store's view of its runs' logs: which generation is each run's current log, what was
 * read of it (the chain, so a write reads only what was appended since), and the files kept open
 * between writes.
 */
export class RunLogs {
  readonly #known = new Map<string, KnownLog>()
  readonly #files = new OpenFiles()

  open(runId: string, dir: string, write: boolean, use?: (log: OpenLog) => void): OpenLog | undefined {
    const log = this.#find(runId, dir, write)
    if (use === undefined || log === undefined) return log
    try {
      use(log)
    } finally {
      log.close()
    }
    return undefined
  }

  /**
   * The run's current log, open (kept open between writes), with what this process knows of it
   * brought up to date (only what was appended since it last read it is read). Undefined when the
   * run has no log. A log compacted away (or deleted) meanwhile is followed to its successor.
   */
  #find(runId: string, dir: string, write: boolean): OpenLog | undefined {
    let generation = this.#known.get(dir)?.generation
    for (;;) {
      if (generation === undefined) {
        generation = readRunDir(runId, dir)?.logs.at(-1)
        if (generation === undefined) {
          this.#known.delete(dir)
          return undefined
        }
      }
      const file = path.join(dir, logName(generation))
      const handle = write ? this.#files.acquire(file) : this.#files.acquireIfOpen(file)
      const fd = handle?.fd ?? openIfExists(file, constants.O_RDONLY)
      if (fd === undefined) {
        generation = undefined
        continue
      }
      const close = () => (handle ? this.#files.release(handle) : closeSync(fd))
      const forget = () => handle && this.#files.drop(handle)
      try {
        const stat = fstatSync(fd)
        if (stat.nlink === 0 && handle) {
          // Kept open, then unlinked (compacted, deleted): open the path again.
          this.#files.drop(handle)
          close()
          continue
        }
        const known = this.#know(runId, dir, generation, fd, stat)
        if (known.chain.sealed && existsSync(path.join(dir, logName(generation + 1)))) {
          close()
          generation += 1
          continue
        }
        return { fd, generation, stat, known, close, forget }
      } catch (error) {
        close()
        throw error
      }
    }
  }

  #know(runId: string, dir: string, generation: number, fd: number, stat: Stats): KnownLog {
    let known = this.#known.get(dir)
    const file = fileIdentity(stat)
    if (known === undefined || known.generation !== generation || known.file !== file || known.chain.scanned > stat.size) {
      known = { generation, file, chain: emptyChain(), unsynced: true }
      this.#known.set(dir, known)
    }
    if (stat.size > known.chain.scanned) {
      // Appended by someone else since this store last read or wrote it.
      known.chain = scanLog(runId, readRange(fd, known.chain.scanned, stat.size), known.chain)
      known.unsynced = true
    }
    return known
  }

  /** Forgets a run's current log (it was compacted: the next open finds its successor). */
  forget(dir: string): void {
    this.#known.delete(dir)
  }

  /** Forgets a deleted run: what was read of it and its open files. */
  forgetRun(dir: string): void {
    this.#known.delete(dir)
    this.#files.dropUnder(`${dir}${path.sep}`)
  }
}
