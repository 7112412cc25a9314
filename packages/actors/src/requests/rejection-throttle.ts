import type { Clock } from '@signalbox/core'

/** How many rejections a reporter publishes one by one before it aggregates them. */
export interface RejectionLimits {
  /** Rejections published individually per window. Default 20. */
  burst: number
  /** Length of a window, from its first rejection. Default 10 s. */
  windowMs: number
  /** Summaries per window: one per (subject, code), the last one shared by every other kind. Default 16. */
  maxSummaries: number
}

/** The summary key of rejections beyond `maxSummaries` distinct kinds in a window. */
export const OTHER = '(other)'

export const DEFAULT_REJECTION_LIMITS: RejectionLimits = { burst: 20, windowMs: 10_000, maxSummaries: 16 }

/** What the throttle says about one rejection. */
export type Admission = 'publish' | 'aggregated'

/** A group of rejections that were counted, not published one by one. */
export interface RejectionSummary<T> {
  /** `subject code`, or `(other)` for rejections beyond `maxSummaries` distinct ones (mixed). */
  key: string
  /** The last rejection of the group (its subject, code and sample stand for the group). */
  last: T
  count: number
}

/**
 * Bounds what a flood of bad messages makes a reporter publish: the first `burst` rejections
 * of a window go out one by one, the rest are counted per (subject, code) and go out as one
 * summary each when the window ends. Every rejection is counted exactly once, so the notices'
 * counts add up to the number of rejections, and a window never yields more than
 * `burst + maxSummaries` notices however many messages arrive.
 */
export class RejectionThrottle<T> {
  readonly #limits: RejectionLimits
  readonly #clock: Clock
  readonly #flush: (summaries: RejectionSummary<T>[]) => void
  #published = 0
  #windowEnds: number | undefined
  #timer: unknown
  readonly #pending = new Map<string, RejectionSummary<T>>()

  constructor(clock: Clock, limits: Partial<RejectionLimits>, flush: (summaries: RejectionSummary<T>[]) => void) {
    this.#clock = clock
    this.#limits = { ...DEFAULT_REJECTION_LIMITS, ...limits }
    this.#flush = flush
  }

  /** Whether to publish `rejection` now, or count it in the window's summary under `key`. */
  admit(key: string, rejection: T): Admission {
    const now = this.#clock.now()
    if (this.#windowEnds === undefined || now >= this.#windowEnds) this.#startWindow(now)
    if (this.#published < this.#limits.burst) {
      this.#published++
      return 'publish'
    }
    const overflow = this.#pending.size >= this.#limits.maxSummaries - 1 && !this.#pending.has(key) ? OTHER : key
    const summary = this.#pending.get(overflow)
    if (summary) {
      summary.count++
      summary.last = rejection
    } else {
      this.#pending.set(overflow, { key: overflow, last: rejection, count: 1 })
    }
    if (this.#timer === undefined) {
      this.#timer = this.#clock.setTimeout(() => this.flush(), Math.max(0, (this.#windowEnds as number) - now))
      // A pending summary must not keep a finished process alive.
      ;(this.#timer as { unref?: () => void } | undefined)?.unref?.()
    }
    return 'aggregated'
  }

  /** Publishes the pending summaries now (the window's end, or a close). */
  flush(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
    if (this.#pending.size === 0) return
    const summaries = [...this.#pending.values()]
    this.#pending.clear()
    this.#flush(summaries)
  }

  #startWindow(now: number): void {
    // Counted rejections belong to the window they arrived in.
    this.flush()
    this.#published = 0
    this.#windowEnds = now + this.#limits.windowMs
  }
}
