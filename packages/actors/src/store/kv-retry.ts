/**
 * The KV store's answer to a cluster that cannot answer for a moment: a leader election, a node
 * lost, a reconnect in progress. Such failures are retried with backoff until the operation's
 * bound (`retryMs`) and its signal allow; anything else fails at once.
 */
import { JetStreamApiError } from '@nats-io/jetstream'
import { AbortedError, type Clock, systemClock } from '@signalbox/core'
import { backoffDelay, sleep } from '@signalbox/core/internal'
import { CheckpointError, RunStoreError, StoreUnavailableError } from '@signalbox/core/store'
import { isRetryable } from '../nats/errors.ts'

export interface RetryOptions {
  signal: AbortSignal
  /** What the operation does, for the error that ends the retries ("Saving the run"). */
  what: string
  runId?: string
  /** How long the operation may keep retrying, from its first attempt. */
  retryMs: number
  /** The pauses between attempts and the bound run on it. Default the system clock. */
  clock?: Clock
}

/** JetStream's error code for "no suitable peers for placement". */
const NO_SUITABLE_PEERS = 10005
/** JetStream's error code for "stream not found". */
const STREAM_NOT_FOUND = 10059

/** Pauses between attempts: 100 ms, doubling, at most 2 s (an election takes 2-10 s). */
const PACING = { baseDelayMs: 100, maxDelayMs: 2_000 }

/**
 * Runs `attempt` until it succeeds, fails for good, or the bound passes. `attempt` gets whether an
 * earlier attempt failed: its write may have been stored all the same, so a compare-and-set can
 * recognise its own write when it reads it back. Any failure counts, not only a timeout: with a
 * stream leader killed under load, a run conflicted with its own write, which fits an attempt
 * whose failure read as "not stored" having been stored all the same.
 */
export async function retryTransient<T>(options: RetryOptions, attempt: (ambiguous: boolean) => Promise<T>): Promise<T> {
  const { signal, what } = options
  const clock = options.clock ?? systemClock
  const started = clock.now()
  let ambiguous = false
  for (let n = 1; ; n++) {
    if (signal.aborted) throw new AbortedError(`${what} was aborted.`, signal.reason)
    try {
      return await attempt(ambiguous)
    } catch (error) {
      if (RunStoreError.is(error) || CheckpointError.is(error) || AbortedError.is(error)) throw error
      if (!isTransient(error)) throw error
      ambiguous = true
      const pause = backoffDelay(n, PACING)
      if (clock.now() - started + pause > options.retryMs) {
        throw new StoreUnavailableError(what, options.retryMs, {
          cause: error,
          ...(options.runId ? { runId: options.runId } : {}),
        })
      }
      try {
        await sleep(pause, { clock, signal })
      } catch {
        throw new AbortedError(`${what} was aborted.`, signal.reason)
      }
    }
  }
}

/** A failure that a later attempt can fix: nobody answered, or the cluster said "not now". */
export function isTransient(error: unknown): boolean {
  if (isRetryable(error)) return true
  // A replicated bucket made while the cluster is short of peers (still forming, a node
  // restarting): placement succeeds once they are back.
  if (error instanceof JetStreamApiError && error.code === NO_SUITABLE_PEERS) return true
  // A bucket another host has just made, not yet known to the node this client asked: opening a
  // bucket creates it when it is missing, so this is that race (three hosts making one R3 bucket at
  // once on a fresh cluster: one host's every operation failed so). A bucket deleted for good
  // fails once the bound passes.
  if (error instanceof JetStreamApiError && error.code === STREAM_NOT_FOUND) return true
  // A JetStream API request's own timeout (its responder was being elected).
  return error instanceof Error && error.name === 'TimeoutError'
}
