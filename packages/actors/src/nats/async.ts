/** Small promise helpers of the NATS transport: one-shot signals, races against reconnects, retry pacing. */
import { BusClosedError } from '@signalbox/core/bus'
import { asError, backoffDelay } from '@signalbox/core/internal'

export interface Deferred {
  promise: Promise<void>
  resolve(): void
}

export function deferred(): Deferred {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

export type Outcome<T> = { kind: 'done'; value: T } | { kind: 'reconnected' } | { kind: 'aborted' }

/** Waits for `work`, but gives up early (without cancelling it) on reconnect, close or abort. */
export function raceOutcome<T>(
  work: Promise<T>,
  reconnected: Promise<void>,
  closed: Promise<void>,
  signal: AbortSignal | undefined,
): Promise<Outcome<T>> {
  return new Promise<Outcome<T>>((resolve, reject) => {
    let done = false
    const finish = (outcome: Outcome<T> | Error) => {
      if (done) return
      done = true
      signal?.removeEventListener('abort', onAbort)
      if (outcome instanceof Error) reject(outcome)
      else resolve(outcome)
    }
    const onAbort = () => finish({ kind: 'aborted' })
    void work.then(
      (value) => finish({ kind: 'done', value }),
      (error: unknown) => finish(asError(error)),
    )
    void reconnected.then(() => finish({ kind: 'reconnected' }))
    void closed.then(() => finish(new BusClosedError('wait for the server')))
    if (signal?.aborted) onAbort()
    else signal?.addEventListener('abort', onAbort, { once: true })
  })
}

/** Resolves with the promise's value, or `undefined` once `ms` have passed or it rejected. */
export function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  return new Promise<T | undefined>((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      () => {
        clearTimeout(timer)
        resolve(undefined)
      },
    )
  })
}

/** 100 ms doubling to 2 s, jittered (the project's one backoff formula). */
export function backoff(attempt: number): number {
  return backoffDelay(attempt + 1, NATS_BACKOFF)
}

const NATS_BACKOFF = { baseDelayMs: 100, maxDelayMs: 2_000 } as const
