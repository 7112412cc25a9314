import { type Clock, ConfigError, systemClock } from '@signalbox/core'

export interface IdempotencyCacheOptions {
  /** Settled results kept at most (the oldest go first). Default 1,000. */
  maxEntries?: number
  /** How long a settled result is replayed. Default 10 minutes. */
  ttlMs?: number
  clock?: Clock
}

interface Entry<T> {
  promise: Promise<T>
  /** Epoch ms after which the entry is forgotten; undefined while the work is still running. */
  expiresAt: number | undefined
}

/**
 * The tool host's memory of recent calls, by idempotency key (`runId:callId`, sent by the agent
 * with every remote call). A call retried after a crash or a reconnect gets the first call's
 * outcome instead of running the tool again; a duplicate that arrives while the first is still
 * running shares its promise. Outcomes are kept whether they succeeded or failed: a failed tool
 * may still have had an effect. Running calls are never evicted (evicting one would let its
 * duplicate run), so the bound applies to settled results.
 */
export class IdempotencyCache<T> {
  readonly #entries = new Map<string, Entry<T>>()
  readonly #maxEntries: number
  readonly #ttlMs: number
  readonly #clock: Clock
  #replays = 0

  constructor(options: IdempotencyCacheOptions = {}) {
    this.#maxEntries = options.maxEntries ?? 1_000
    this.#ttlMs = options.ttlMs ?? 10 * 60_000
    this.#clock = options.clock ?? systemClock
    if (!Number.isInteger(this.#maxEntries) || this.#maxEntries < 1) {
      throw new ConfigError(`IdempotencyCache: maxEntries must be a positive integer, got ${this.#maxEntries}.`)
    }
    if (!(this.#ttlMs > 0)) throw new ConfigError(`IdempotencyCache: ttlMs must be positive, got ${this.#ttlMs}.`)
  }

  /**
   * The outcome of the first `work` run under `key`, running it only if no live entry exists.
   * `replayed` says whether this call reused an earlier one (for the audit).
   */
  run(key: string, work: () => Promise<T>): { promise: Promise<T>; replayed: boolean } {
    if (key.length === 0) throw new ConfigError('IdempotencyCache: the idempotency key is empty.')
    const existing = this.#live(key)
    if (existing !== undefined) {
      this.#replays++
      return { promise: existing.promise, replayed: true }
    }
    let promise: Promise<T>
    try {
      promise = work()
    } catch (error) {
      promise = Promise.reject(error)
    }
    const entry: Entry<T> = { promise, expiresAt: undefined }
    this.#entries.set(key, entry)
    const settle = () => {
      // Only if still ours: `clear()` or a newer entry under the key must not be touched.
      if (this.#entries.get(key) === entry) entry.expiresAt = this.#clock.now() + this.#ttlMs
      this.#evict()
    }
    promise.then(settle, settle)
    return { promise, replayed: false }
  }

  /** Entries held now (running and settled, expired ones not yet swept included). */
  get size(): number {
    return this.#entries.size
  }

  /** How many calls were answered from the cache. */
  get replays(): number {
    return this.#replays
  }

  clear(): void {
    this.#entries.clear()
  }

  #live(key: string): Entry<T> | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    if (entry.expiresAt !== undefined && entry.expiresAt <= this.#clock.now()) {
      this.#entries.delete(key)
      return undefined
    }
    return entry
  }

  #evict(): void {
    const now = this.#clock.now()
    for (const [key, entry] of this.#entries) {
      if (entry.expiresAt !== undefined && entry.expiresAt <= now) this.#entries.delete(key)
    }
    // Map order is insertion order: the first settled entries are the oldest.
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= this.#maxEntries) break
      if (entry.expiresAt !== undefined) this.#entries.delete(key)
    }
  }
}
