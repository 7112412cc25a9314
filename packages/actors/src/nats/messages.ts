/**
 * What handlers receive and hold on NATS: plain and durable messages (like nats.js's
 * `jsmsg.ts`), the plain subscription, the header and payload codec, and the confirmed ack.
 */
import type { JsMsg } from '@nats-io/jetstream'
import {
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription as NatsSubscription,
  headers as natsHeaders,
} from '@nats-io/transport-node'
import type { BusHeaders, BusMessage, DurableMessage, Subscription } from '@signalbox/core/bus'
import { backoff } from './async.ts'
import type { ConnectionWatch } from './connection.ts'
import type { BusInternals } from './internals.ts'

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const ACK = encoder.encode('+ACK')

export class NatsMessage implements BusMessage {
  readonly subject: string
  readonly data: Uint8Array
  readonly reply: string | undefined
  readonly #msg: Msg | JsMsg
  readonly #bus: BusInternals
  #headers: BusHeaders | undefined | null = null
  #text: string | undefined

  constructor(msg: Msg | JsMsg, reply: string | undefined, bus: BusInternals) {
    this.#msg = msg
    this.subject = msg.subject
    this.data = msg.data
    this.reply = reply
    this.#bus = bus
  }

  get headers(): BusHeaders | undefined {
    // Converted on first use: most handlers never look.
    if (this.#headers === null) this.#headers = fromNatsHeaders(this.#msg.headers)
    return this.#headers
  }

  respond(data: Uint8Array | string, options?: { headers?: BusHeaders }): boolean {
    if (this.reply === undefined) return false
    this.#bus.respond(this.reply, data, options?.headers)
    return true
  }

  text(): string {
    if (this.#text === undefined) this.#text = decoder.decode(this.data)
    return this.#text
  }
}

/** Where a durable message reports how it was settled (the consumer that delivered it). */
export interface AckTarget {
  acked(msg: JsMsg): void
  naked(msg: JsMsg): void
  working(msg: JsMsg): void
}

export class NatsDurableMessage extends NatsMessage implements DurableMessage {
  readonly seq: number
  readonly storedAt: number
  readonly #consumer: AckTarget
  readonly #jsMsg: JsMsg
  #settled = false

  constructor(msg: JsMsg, consumer: AckTarget, bus: BusInternals) {
    super(msg, undefined, bus)
    this.#jsMsg = msg
    this.#consumer = consumer
    this.seq = msg.info.streamSequence
    // The server's clock when the stream stored it (not anything the publisher wrote).
    this.storedAt = Math.floor(msg.info.timestampNanos / 1_000_000)
  }

  ack(): void {
    if (this.#settled) return
    this.#settled = true
    this.#consumer.acked(this.#jsMsg)
  }

  nak(delayMs?: number): void {
    if (this.#settled) return
    this.#settled = true
    this.#consumer.naked(this.#jsMsg)
    // Fire and forget: if the nak is lost, the ack wait redelivers the message anyway.
    this.#jsMsg.nak(delayMs !== undefined && delayMs > 0 ? delayMs : undefined)
  }

  working(): void {
    if (this.#settled) return
    this.#consumer.working(this.#jsMsg)
    this.#jsMsg.working()
  }
}

export class NatsPlainSubscription implements Subscription {
  closed = false
  ready: Promise<void> = Promise.resolve()
  readonly subject: string
  readonly queue: string | undefined
  #subscription: NatsSubscription | undefined
  #signal: AbortSignal | undefined
  readonly #onAbort = () => this.unsubscribe()

  constructor(subject: string, queue: string | undefined) {
    this.subject = subject
    this.queue = queue
  }

  bind(subscription: NatsSubscription, signal: AbortSignal | undefined): void {
    this.#subscription = subscription
    if (signal) {
      this.#signal = signal
      signal.addEventListener('abort', this.#onAbort, { once: true })
    }
  }

  unsubscribe(): void {
    if (this.closed) return
    this.closed = true
    this.#signal?.removeEventListener('abort', this.#onAbort)
    try {
      this.#subscription?.unsubscribe()
    } catch {
      // connection already closed: nothing left to unsubscribe
    }
  }
}

/**
 * Acknowledges so that the ack survives a reconnect: ack-ack (the server confirms), retried
 * until confirmed or the ack wait has passed (then the message is redelivered anyway).
 * `keepTrying` says whether the bus still wants it (open, or closing and draining).
 */
export async function ackConfirmed(
  connection: NatsConnection,
  watch: ConnectionWatch,
  reply: string,
  ackWaitMs: number,
  keepTrying: () => boolean,
): Promise<void> {
  const deadline = Date.now() + Math.max(ackWaitMs, 5_000)
  for (let attempt = 0; keepTrying(); attempt++) {
    if (connection.isClosed()) return
    const acking = connection.request(reply, ACK, { timeout: Math.min(2_000, Math.max(ackWaitMs, 500)) })
    acking.catch(() => {})
    try {
      const outcome = await watch.race(acking, undefined)
      if (outcome.kind === 'done') return
    } catch {
      // lost with the connection, or timed out: try again below
    }
    if (Date.now() >= deadline) return
    await watch.pause(backoff(attempt), undefined).catch(() => {})
  }
}

export function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === 'string' ? encoder.encode(data) : data
}

export function toNatsHeaders(headers: BusHeaders | undefined): MsgHdrs | undefined {
  if (headers === undefined) return undefined
  const h = natsHeaders()
  for (const [key, value] of Object.entries(headers)) h.set(key, value)
  return h
}

export function fromNatsHeaders(headers: MsgHdrs | undefined): BusHeaders | undefined {
  if (headers === undefined) return undefined
  const out: Record<string, string> = {}
  for (const [key, values] of headers) out[key] = values[values.length - 1] ?? ''
  return Object.freeze(out)
}

/** Size of the encoded header block (`NATS/1.0\r\n` + `key: value\r\n`... + `\r\n`), without encoding it. */
export function headerSize(headers: MsgHdrs): number {
  let size = 12
  for (const [key, values] of headers) {
    for (const value of values) size += Buffer.byteLength(key) + Buffer.byteLength(value) + 4
  }
  return size
}
