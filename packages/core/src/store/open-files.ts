import { closeSync, constants } from 'node:fs'
import { openIfExists } from './run-dir.ts'

/** An open file as `OpenFiles` hands it out: give it back with `release`. */
export interface FileHandle {
  readonly fd: number
  readonly path: string
  users: number
}

const WRITE = constants.O_RDWR | constants.O_APPEND

/**
 * The run logs a store writes, kept open between writes (an open and a close per write cost more
 * than the write), at most `limit` idle ones, least recently used closed first. A handle in use is
 * never closed under its user: dropped or evicted, it closes when released.
 */
export class OpenFiles {
  readonly #open = new Map<string, FileHandle>()
  readonly #limit: number

  constructor(limit = 256) {
    this.#limit = limit
  }

  /** The file opened for appending (shared with other users); undefined when it does not exist. */
  acquire(path: string): FileHandle | undefined {
    const cached = this.#open.get(path)
    if (cached !== undefined) {
      cached.users++
      this.#open.delete(path)
      this.#open.set(path, cached)
      return cached
    }
    const fd = openIfExists(path, WRITE)
    if (fd === undefined) return undefined
    const handle: FileHandle = { fd, path, users: 1 }
    this.#open.set(path, handle)
    this.#evict()
    return handle
  }

  /** The file if it is open already (for a read: a read opens no file to keep). */
  acquireIfOpen(path: string): FileHandle | undefined {
    return this.#open.has(path) ? this.acquire(path) : undefined
  }

  release(handle: FileHandle): void {
    handle.users--
    if (handle.users === 0 && this.#open.get(handle.path) !== handle) closeSync(handle.fd)
  }

  /** Forgets the file (it was unlinked or replaced): the next `acquire` opens the path again. */
  drop(handle: FileHandle): void {
    if (this.#open.get(handle.path) === handle) this.#open.delete(handle.path)
  }

  /** Forgets every file under `prefix` (a run directory deleted). */
  dropUnder(prefix: string): void {
    for (const [path, handle] of this.#open) {
      if (!path.startsWith(prefix)) continue
      this.#open.delete(path)
      if (handle.users === 0) closeSync(handle.fd)
    }
  }

  #evict(): void {
    for (const [path, handle] of this.#open) {
      if (this.#open.size <= this.#limit) return
      if (handle.users > 0) continue
      this.#open.delete(path)
      closeSync(handle.fd)
    }
  }
}
