import { AbortedError } from '@signalbox/core'

interface Slot {
  active: number
  waiting: Set<() => void>
}

/**
 * The children of one parent that may run at once (`maxConcurrentChildren`): a counting
 * semaphore per parent run; more wait their turn, first come, first served.
 */
export class ChildSlots {
  readonly #max: number
  readonly #slots = new Map<string, Slot>()

  constructor(max: number) {
    this.#max = max
  }

  /** A slot among the parent's; waits when all are taken. Resolves with the release (idempotent). */
  async acquire(parentRunId: string, signal: AbortSignal | undefined): Promise<() => void> {
    let slot = this.#slots.get(parentRunId)
    if (!slot) {
      slot = { active: 0, waiting: new Set() }
      this.#slots.set(parentRunId, slot)
    }
    const s = slot
    if (signal?.aborted) throw new AbortedError('Cancelled before the child started.')
    if (s.active >= this.#max || s.waiting.size > 0) {
      // The slot is handed over by `release` (active stays counted), so nobody can jump the queue.
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        }
        const onAbort = () => {
          // A waiter that gives up must not swallow the next hand-over.
          s.waiting.delete(wake)
          if (s.active === 0 && s.waiting.size === 0) this.#slots.delete(parentRunId)
          reject(new AbortedError('Cancelled while waiting for a child slot.'))
        }
        s.waiting.add(wake)
        signal?.addEventListener('abort', onAbort, { once: true })
      })
    } else {
      s.active++
    }
    let released = false
    return () => {
      if (released) return
      released = true
      const next = s.waiting.values().next().value
      if (next) {
        s.waiting.delete(next)
        next()
        return
      }
      s.active--
      if (s.active === 0) this.#slots.delete(parentRunId)
    }
  }
}
