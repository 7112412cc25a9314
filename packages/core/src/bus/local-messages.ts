/** What handlers receive and hold on the in-process bus: messages, durable messages, subscriptions. */
import type { BusHeaders, BusMessage, DurableMessage, MessageHandler, PublishOptions, Subscription } from './bus.ts'

const decoder = new TextDecoder()
const READY: Promise<void> = Promise.resolve()

/** Where a message's `respond` publishes (the bus). */
export interface Replier {
  publish(subject: string, data: Uint8Array | string, options?: PublishOptions): void
}

export class LocalMessage implements BusMessage {
  #text: string | undefined
  readonly subject: string
  readonly data: Uint8Array
  readonly headers: BusHeaders | undefined
  readonly reply: string | undefined
  readonly #bus: Replier

  constructor(subject: string, data: Uint8Array, headers: BusHeaders | undefined, reply: string | undefined, bus: Replier) {
    this.subject = subject
    this.data = data
    this.headers = headers
    this.reply = reply
    this.#bus = bus
  }

  respond(data: Uint8Array | string, options?: { headers?: BusHeaders }): boolean {
    if (this.reply === undefined) return false
    this.#bus.publish(this.reply, data, options?.headers ? { headers: options.headers } : undefined)
    return true
  }

  text(): string {
    if (this.#text === undefined) this.#text = decoder.decode(this.data)
    return this.#text
  }
}

export class LocalSubscription implements Subscription {
  closed = false
  /** Routing is synchronous in-process: ready at once. */
  readonly ready = READY
  readonly subject: string
  readonly queue: string | undefined
  readonly handler: MessageHandler
  /** Pre-split pattern; `undefined` for literal subjects (matched by map lookup). */
  readonly tokens: string[] | undefined
  readonly #detach: (subscription: LocalSubscription) => void
  #signal: AbortSignal | undefined
  #onAbort: (() => void) | undefined

  constructor(
    subject: string,
    handler: MessageHandler,
    queue: string | undefined,
    detach: (subscription: LocalSubscription) => void,
  ) {
    this.subject = subject
    this.handler = handler
    this.queue = queue
    this.#detach = detach
    this.tokens = subject.includes('*') || subject.includes('>') ? subject.split('.') : undefined
  }

  bindSignal(signal: AbortSignal): void {
    this.#signal = signal
    // Made in a local, then stored: V8 allocates a closure written straight into a property in
    // its old generation, where it keeps what it captured through young GCs (docs/benchmarks.md).
    const onAbort = () => this.unsubscribe()
    this.#onAbort = onAbort
    signal.addEventListener('abort', onAbort, { once: true })
  }

  unsubscribe(): void {
    if (this.closed) return
    this.closed = true
    if (this.#onAbort) this.#signal?.removeEventListener('abort', this.#onAbort)
    this.#detach(this)
  }
}

/** How a durable message settles its delivery (the consumer group that handed it out). */
export interface Settlement {
  ack(): void
  nak(delayMs: number | undefined): void
  working(): void
}

export class LocalDurableMessage extends LocalMessage implements DurableMessage {
  readonly seq: number
  readonly storedAt: number | undefined
  readonly #settlement: Settlement

  constructor(
    seq: number,
    subject: string,
    data: Uint8Array,
    headers: BusHeaders,
    bus: Replier,
    settlement: Settlement,
    storedAt?: number,
  ) {
    super(subject, data, headers, undefined, bus)
    this.seq = seq
    this.storedAt = storedAt
    this.#settlement = settlement
  }

  ack(): void {
    this.#settlement.ack()
  }

  nak(delayMs?: number): void {
    this.#settlement.nak(delayMs)
  }

  working(): void {
    this.#settlement.working()
  }
}
