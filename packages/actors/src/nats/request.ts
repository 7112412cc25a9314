/** Request/reply on NATS: the shared inbox when nothing can cancel, a private one when a signal can. */
import {
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription as NatsSubscription,
} from '@nats-io/transport-node'
import { BusClosedError, BusNoRespondersError, BusTimeoutError } from '@signalbox/core/bus'
import { DEFAULT_STALL_MS, whenAborted } from '@signalbox/core/internal'
import { mapNatsError, requestAborted } from './errors.ts'

export interface NatsRequest {
  subject: string
  bytes: Uint8Array
  headers: MsgHdrs | undefined
  timeoutMs: number
  signal: AbortSignal | undefined
  /** The connection's inbox prefix: under least privilege it may only read `_INBOX.<name>.>`. */
  inboxPrefix?: string | undefined
}

/**
 * Sends one request and resolves with the reply. `pending` holds a way to fail it while it runs
 * (`close()` fails them, as a draining connection would let them run to their timeout).
 */
export function natsRequest(
  connection: NatsConnection,
  request: NatsRequest,
  pending: Set<(error: Error) => void>,
  isClosed: () => boolean,
): Promise<Msg> {
  const { subject, bytes, headers, timeoutMs, signal } = request
  if (signal !== undefined) return requestWithSignal(connection, request, signal, pending)
  // The shared (muxed) inbox: no SUB/UNSUB per request.
  return new Promise<Msg>((resolve, reject) => {
    const fail = (error: Error) => reject(error)
    pending.add(fail)
    connection
      .request(subject, bytes, { timeout: timeoutMs, ...(headers ? { headers } : {}) })
      .then(resolve, (error: unknown) =>
        reject(isClosed() ? new BusClosedError('request', error) : mapNatsError(error, subject, 'request', timeoutMs)),
      )
      .finally(() => pending.delete(fail))
  })
}

/** A private inbox per request so that aborting can drop it at once (the muxed one cannot be cancelled). */
function requestWithSignal(
  connection: NatsConnection,
  { subject, bytes, headers, timeoutMs, inboxPrefix }: NatsRequest,
  signal: AbortSignal,
  pending: Set<(error: Error) => void>,
): Promise<Msg> {
  return new Promise<Msg>((resolve, reject) => {
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    let inboxSubscription: NatsSubscription | undefined
    let stopWatching: (() => void) | undefined
    const fail = (error: Error) => settle(error)
    const settle = (error: Error | undefined, msg?: Msg) => {
      if (settled) return
      settled = true
      pending.delete(fail)
      if (timer !== undefined) clearTimeout(timer)
      stopWatching?.()
      inboxSubscription?.unsubscribe()
      if (error) reject(error)
      else resolve(msg as Msg)
    }
    const onAbort = () => settle(requestAborted(subject, signal))
    pending.add(fail)
    try {
      const inbox = createInbox(inboxPrefix)
      inboxSubscription = connection.subscribe(inbox, {
        max: 1,
        callback: (error, msg) => {
          if (error) return settle(mapNatsError(error, subject, 'request', timeoutMs))
          // The server answers "no responders" with an empty 503 status message.
          if (msg.data.length === 0 && msg.headers?.code === 503) return settle(new BusNoRespondersError(subject))
          settle(undefined, msg)
        },
      })
      connection.publish(subject, bytes, { reply: inbox, ...(headers ? { headers } : {}) })
    } catch (error) {
      return settle(mapNatsError(error, subject, 'request', timeoutMs))
    }
    timer = setTimeout(() => settle(new BusTimeoutError(subject, timeoutMs)), timeoutMs)
    // One listener on a signal many requests share (see `whenAborted`).
    stopWatching = whenAborted(signal, onAbort)
  })
}

export interface NatsRequestMany {
  subject: string
  bytes: Uint8Array
  headers: MsgHdrs | undefined
  timeoutMs: number
  stallMs?: number | undefined
  maxReplies?: number | undefined
  requireReply?: boolean | undefined
  signal?: AbortSignal | undefined
  inboxPrefix?: string | undefined
}

/**
 * Scatter-gather on a private inbox: every reply until `timeoutMs`, `stallMs` without one after a
 * reply, or `maxReplies`; none at once when the server says nobody listens (its 503).
 */
export function natsRequestMany(
  connection: NatsConnection,
  { subject, bytes, headers, timeoutMs, stallMs, maxReplies, requireReply, signal, inboxPrefix }: NatsRequestMany,
  pending: Set<(error: Error) => void>,
): Promise<Msg[]> {
  return new Promise<Msg[]>((resolve, reject) => {
    const replies: Msg[] = []
    let settled = false
    let timer: ReturnType<typeof setTimeout> | undefined
    let stall: ReturnType<typeof setTimeout> | undefined
    let inboxSubscription: NatsSubscription | undefined
    let stopWatching: (() => void) | undefined
    const fail = (error: Error) => settle(error)
    const settle = (error?: Error) => {
      if (settled) return
      settled = true
      pending.delete(fail)
      clearTimeout(timer)
      clearTimeout(stall)
      stopWatching?.()
      inboxSubscription?.unsubscribe()
      if (error) reject(error)
      else resolve(replies)
    }
    const onAbort = () => settle(requestAborted(subject, signal as AbortSignal))
    pending.add(fail)
    try {
      inboxSubscription = connection.subscribe(createInbox(inboxPrefix), {
        callback: (error, msg) => {
          if (error) return settle(mapNatsError(error, subject, 'request', timeoutMs))
          // The server answers "no responders" with an empty 503 status message.
          if (msg.data.length === 0 && msg.headers?.code === 503)
            return settle(requireReply && replies.length === 0 ? new BusNoRespondersError(subject) : undefined)
          replies.push(msg)
          if (maxReplies !== undefined && replies.length >= maxReplies) return settle()
          clearTimeout(stall)
          stall = setTimeout(() => settle(), stallMs ?? DEFAULT_STALL_MS)
        },
      })
      connection.publish(subject, bytes, { reply: inboxSubscription.getSubject(), ...(headers ? { headers } : {}) })
    } catch (error) {
      return settle(mapNatsError(error, subject, 'request', timeoutMs))
    }
    timer = setTimeout(
      () => settle(requireReply && replies.length === 0 ? new BusTimeoutError(subject, timeoutMs) : undefined),
      timeoutMs,
    )
    if (signal) stopWatching = whenAborted(signal, onAbort)
  })
}
