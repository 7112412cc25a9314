import type { Clock } from '@signalbox/core'

export interface SilenceWatch {
  /** Something was heard from the watched party (a heartbeat, a renewal). */
  heard(): void
  stop(): void
}

/**
 * Calls `onSilent` once nothing was heard for `limitMs`, but never from a timer that fired late:
 * a process that was stalled itself (a long GC, a busy event loop) cannot tell the other side's
 * silence from its own deafness, since heartbeats sent meanwhile may still be in flight. It then
 * looks again `recheckMs` later. With `confirmMs`, nor from the first look that finds the silence:
 * a stall that ended just before it leaves that timer on time, while what the party sent meanwhile
 * is still unread (timers run before I/O), so the verdict waits for one more look, `confirmMs`
 * later. Erring this way only delays the verdict; the other way denies or cancels work whose
 * owner is alive.
 */
export function watchSilence(
  clock: Clock,
  options: {
    limitMs: number
    recheckMs: number
    /** When the party was last heard of elsewhere (e.g. a heartbeat map), besides `heard()`. */
    lastHeard?: () => number
    /** Judge only when a second look, this long after the one that found the silence, finds it too. */
    confirmMs?: number
  },
  onSilent: (silentMs: number) => void,
): SilenceWatch {
  const { limitMs, recheckMs } = options
  let heardAt = clock.now()
  let stopped = false
  let timer: unknown
  let due = 0
  /** The last look found the silence: the next one, if it still does, decides. */
  let suspect = false
  const look = (afterMs: number) => {
    due = clock.now() + afterMs
    timer = clock.setTimeout(check, afterMs)
  }
  const check = () => {
    if (stopped) return
    const now = clock.now()
    const silentMs = now - Math.max(heardAt, options.lastHeard?.() ?? 0)
    const wasSuspect = suspect
    suspect = false
    if (silentMs < limitMs) return look(limitMs - silentMs)
    if (now - due > recheckMs / 2) return look(recheckMs)
    if (options.confirmMs !== undefined && !wasSuspect) {
      suspect = true
      return look(options.confirmMs)
    }
    stopped = true
    onSilent(silentMs)
  }
  look(limitMs)
  return {
    heard() {
      heardAt = clock.now()
    },
    stop() {
      stopped = true
      clock.clearTimeout(timer)
    },
  }
}
