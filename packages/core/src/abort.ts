import { AbortedError, SignalboxError } from './errors.ts'

/**
 * Settles like `work`, or rejects as soon as `signal` aborts, so a wait never outlives its
 * owner even when the work ignores its signal (its late result is dropped, its late rejection
 * swallowed). The rejection is the signal's reason when it is already a signalbox error (a
 * timeout, a withdrawal), else an `AbortedError` whose cause is the reason.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, what = 'The operation'): Promise<T> {
  if (signal === undefined) return work
  const abortError = () =>
    SignalboxError.is(signal.reason) ? signal.reason : new AbortedError(`${what} was aborted.`, signal.reason)
  if (signal.aborted) {
    work.catch(() => {})
    return Promise.reject(abortError())
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      work.catch(() => {})
      reject(abortError())
    }
    signal.addEventListener('abort', onAbort, { once: true })
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort)
        resolve(value)
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort)
        reject(error)
      },
    )
  })
}

interface Fanout {
  readonly callbacks: Set<() => void>
  readonly listener: () => void
}

const fanouts = new WeakMap<AbortSignal, Fanout>()

/**
 * Calls `onAbort` once when `signal` aborts (at once if it already has), until the returned
 * function is called. However many callers wait on one signal (a server's shutdown signal given to
 * every run), the signal carries one listener: one each would pass Node's limit of 10 and print a
 * `MaxListenersExceededWarning` for what is not a leak.
 */
export function whenAborted(signal: AbortSignal, onAbort: () => void): () => void {
  if (signal.aborted) {
    onAbort()
    return () => {}
  }
  let fanout = fanouts.get(signal)
  if (fanout === undefined) {
    const callbacks = new Set<() => void>()
    const listener = () => {
      fanouts.delete(signal)
      for (const callback of [...callbacks]) callback()
    }
    fanout = { callbacks, listener }
    fanouts.set(signal, fanout)
    signal.addEventListener('abort', listener, { once: true })
  }
  const mine = fanout
  // A callback of its own: the same function given twice is called twice and removed one at a time.
  const callback = () => onAbort()
  mine.callbacks.add(callback)
  return () => {
    if (!mine.callbacks.delete(callback) || mine.callbacks.size > 0) return
    signal.removeEventListener('abort', mine.listener)
    if (fanouts.get(signal) === mine) fanouts.delete(signal)
  }
}
