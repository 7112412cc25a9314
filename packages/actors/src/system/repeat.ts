import type { Clock } from '@signalbox/core'

/**
 * Calls `fn` every `ms` on `clock` until the returned function is called. The `Clock` has no
 * interval, so each tick schedules the next; a test's simulated clock drives it like any timer.
 */
export function repeat(clock: Clock, ms: number, fn: () => void, options: { unref?: boolean } = {}): () => void {
  let stopped = false
  let timer: unknown
  const schedule = () => {
    timer = clock.setTimeout(() => {
      if (stopped) return
      fn()
      if (!stopped) schedule()
    }, ms)
    // A background refresh must not keep the process alive on its own.
    if (options.unref) (timer as { unref?: () => void } | undefined)?.unref?.()
  }
  schedule()
  return () => {
    stopped = true
    clock.clearTimeout(timer)
  }
}
