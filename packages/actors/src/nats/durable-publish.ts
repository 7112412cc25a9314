/**
 * One `durablePublish` on NATS: a JetStream publish with a `msgID`, retried with the same id (so
 * the stream de-duplicates) until the server acknowledges it, across reconnects and restarts.
 */
import type { JetStreamClient } from '@nats-io/jetstream'
import type { MsgHdrs } from '@nats-io/transport-node'
import { AbortedError } from '@signalbox/core'
import { BusClosedError } from '@signalbox/core/bus'
import { backoff } from './async.ts'
import type { ConnectionWatch } from './connection.ts'
import { isNoResponders, isRetryable, mapDurableError } from './errors.ts'

export interface DurablePublishAttempt {
  subject: string
  bytes: Uint8Array
  headers: MsgHdrs
  msgId: string
  signal: AbortSignal | undefined
  /** How long one attempt waits for the stream's ack. */
  attemptTimeoutMs: number
}

export interface DurablePublisher {
  js: JetStreamClient
  watch: ConnectionWatch
  isClosed(): boolean
  maxPayload(): number
  /** Recreates the stream (after repeated "no responders" on a live connection). */
  ensureStream(): Promise<void>
}

export async function publishUntilAcked(
  publisher: DurablePublisher,
  { subject, bytes, headers, msgId, signal, attemptTimeoutMs }: DurablePublishAttempt,
): Promise<{ seq: number; duplicate: boolean }> {
  const { js, watch } = publisher
  for (let attempt = 0; ; attempt++) {
    if (publisher.isClosed()) throw new BusClosedError('durablePublish')
    if (signal?.aborted) throw new AbortedError(`Durable publish on "${subject}" was aborted.`, signal.reason)
    const publishing = js.publish(subject, bytes, { msgID: msgId, headers, timeout: attemptTimeoutMs })
    publishing.catch(() => {}) // may be abandoned below
    try {
      const outcome = await watch.race(publishing, signal)
      // A duplicate on a retry is our own earlier attempt that landed (its ack was lost): stored
      // once, by us. Only a duplicate on the first attempt means someone else stored this id first.
      if (outcome.kind === 'done') return { seq: outcome.value.seq, duplicate: outcome.value.duplicate && attempt === 0 }
      if (outcome.kind === 'aborted') {
        throw new AbortedError(`Durable publish on "${subject}" was aborted.`, signal?.reason)
      }
    } catch (error) {
      if (AbortedError.is(error)) throw error
      if (publisher.isClosed()) throw new BusClosedError('durablePublish', error)
      if (!isRetryable(error)) throw mapDurableError(error, subject, publisher.maxPayload())
      // No responders on a live connection can mean the stream is gone: recreate it.
      if (attempt >= 2 && isNoResponders(error)) void publisher.ensureStream().catch(() => {})
      await watch.pause(backoff(attempt), signal)
    }
  }
}
