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
