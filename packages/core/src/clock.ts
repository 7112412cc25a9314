/**
 * Time is injected so approval deadlines, retries and tool timeouts can be driven by XState's
 * `SimulatedClock` in tests. The shape is XState's `Clock` plus `now()`.
 */
export interface Clock {
  now(): number
  setTimeout(fn: (...args: unknown[]) => void, timeout: number): unknown
  clearTimeout(id: unknown): void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, timeout) => setTimeout(fn, timeout),
  clearTimeout: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
}

/** Resolves after `ms` on `clock`; rejects with the signal's reason when aborted first. */
export function sleep(ms: number, options: { clock?: Clock; signal?: AbortSignal } = {}): Promise<void> {
  const clock = options.clock ?? systemClock
  const { signal } = options
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const onAbort = () => {
      clock.clearTimeout(id)
      reject(signal?.reason)
    }
    const id = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
