/**
 * The transport the actors talk over. Two implementations share one contract (and one
 * conformance suite): the in-process bus (embedded default, no server) and NATS.
 * Payloads are bytes; protocol messages are JSON validated in `protocol/`.
 */
export type BusHeaders = Record<string, string>

// Defaults both transports share, so code behaves the same on either.

/** NATS's default `max_payload`. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024
/** JetStream's default duplicate window. */
export const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000
/** JetStream's default `ack_wait`. */
export const DEFAULT_ACK_WAIT_MS = 30_000
/** `requestMany`: how long after a reply the gathering waits for another. */
export const DEFAULT_STALL_MS = 300

/** Why plain publish/request are refused on durable subjects (on both transports). */
export const DURABLE_ONLY_REASON =
  'the subject belongs to the durable store: use durablePublish/durableConsume (on NATS, JetStream would store a plain publish without de-duplication and answer a request with its own publish ack)'

export interface BusMessage {
  readonly subject: string
  readonly data: Uint8Array
  readonly headers: BusHeaders | undefined
  /** Reply subject when the sender expects an answer (request/reply). */
  readonly reply: string | undefined
  /** Answers a request. Returns false when the message had no reply subject. */
  respond(data: Uint8Array | string, options?: { headers?: BusHeaders }): boolean
  /** The payload decoded as UTF-8 text. */
  text(): string
}

export interface SubscribeOptions {
  /** Queue group: each message goes to one member of the group only. */
  queue?: string
  /** Aborting unsubscribes. */
  signal?: AbortSignal
}

export interface RequestOptions {
  /** Milliseconds before the request fails with `BusTimeoutError`. */
  timeoutMs: number
  signal?: AbortSignal
  headers?: BusHeaders
}

export interface RequestManyOptions {
  /** The longest the replies are gathered, in milliseconds. */
  timeoutMs: number
  /** After a reply, stop once no other came for this long. Default `DEFAULT_STALL_MS` (300 ms). */
  stallMs?: number
  /** Stop once this many replies came. */
  maxReplies?: number
  /**
   * No reply at all fails as `request` does: `BusNoRespondersError` at once when nobody listens,
   * `BusTimeoutError` after `timeoutMs` when nobody answered (instead of resolving with none).
   */
  requireReply?: boolean
  signal?: AbortSignal
  headers?: BusHeaders
}

export interface PublishOptions {
  headers?: BusHeaders
  reply?: string
}

export type MessageHandler = (message: BusMessage) => void | Promise<void>

export interface Subscription {
  readonly subject: string
  readonly queue: string | undefined
  /**
   * Resolves once the server routes messages to this subscription (for a durable consumer:
   * once the consumer exists). Publish a request only after its reply consumer is ready.
   * Rejects if the subscription could not be set up.
   */
  readonly ready: Promise<void>
  /**
   * A durable consumer: resolves once it has handed the handler every message the log held when
   * the consumer was made (at once when there were none). Absent: use `ready`.
   */
  readonly caughtUp?: Promise<void>
  unsubscribe(): void
  readonly closed: boolean
}

/** A message kept by the durable path: published at least once, delivered until acknowledged. */
export interface DurableMessage extends BusMessage {
  /** Sequence in the durable log (monotonic per stream). */
  readonly seq: number
  /**
   * When the durable log stored it (epoch ms, the server's clock on NATS): a time the sender
   * cannot choose, unlike any time written in the message (see `docs/durability.md`).
   */
  readonly storedAt?: number
  ack(): void
  /** Asks for redelivery later (e.g. the handler could not process it yet). */
  nak(delayMs?: number): void
  /** Still working on it: postpones redelivery by another ack wait (a person is deciding). */
  working(): void
}

/** A message as the durable log keeps it (`durableLast`). */
export interface StoredMessage {
  readonly subject: string
  readonly data: Uint8Array
  readonly headers: BusHeaders | undefined
  /** Sequence in the durable log. */
  readonly seq: number
  /** When the durable log stored it (epoch ms). */
  readonly storedAt: number
}

export interface DurablePublishOptions {
  /** De-duplication id: a second publish with the same id inside the window is dropped. */
  msgId: string
  headers?: BusHeaders
  signal?: AbortSignal
}

export interface DurableConsumeOptions {
  /**
   * Consumers with the same durable name share the messages (each delivered to one of them);
   * without a name, the consumer is private and starts at new messages.
   */
  durableName?: string
  /** Start from the first message still in the log instead of new ones (private consumers). */
  deliverAll?: boolean
  /**
   * Start at this sequence of the log (private consumers), e.g. just after the last message a
   * resumed run consumed. Wins over `deliverAll`.
   */
  startSeq?: number
  /** Milliseconds before an unacknowledged message is redelivered. */
  ackWaitMs?: number
  /**
   * What a private consumer is for (`decisions`, `steer`, `audit`...). On NATS with a
   * `consumerPrefix` it is named `<consumerPrefix>_<purpose>`, a name permissions can pin.
   */
  purpose?: string
  signal?: AbortSignal
}

export type DurableHandler = (message: DurableMessage) => void | Promise<void>

export type BusStatus =
  | { type: 'disconnect'; server?: string }
  | { type: 'reconnect'; server?: string }
  | { type: 'reconnecting' }
  | { type: 'error'; error: Error }
  | { type: 'closed' }

export interface Bus {
  /** For logs: `in-process` or the NATS connection name. */
  readonly name: string
  /** Largest payload accepted, in bytes. Larger publishes throw `BusPayloadTooLargeError`. */
  readonly maxPayload: number

  publish(subject: string, data: Uint8Array | string, options?: PublishOptions): void
  subscribe(subject: string, handler: MessageHandler, options?: SubscribeOptions): Subscription
  /**
   * Request/reply. Fails with `BusNoRespondersError` at once when nobody listens,
   * `BusTimeoutError` after `timeoutMs`, `AbortedError` when the signal aborts.
   */
  request(subject: string, data: Uint8Array | string, options: RequestOptions): Promise<BusMessage>
  /**
   * Scatter-gather: one request, the reply of every subscriber (a queue group answering once).
   * Resolves with the replies gathered until `timeoutMs`, `stallMs` without a new one after a
   * reply, or `maxReplies`; with none at once when nobody listens. `AbortedError` when the signal aborts.
   */
  requestMany(subject: string, data: Uint8Array | string, options: RequestManyOptions): Promise<BusMessage[]>

  /**
   * The path for messages that must not be lost (approvals, decisions, steering, audit):
   * acknowledged by the server, de-duplicated by `msgId`, replayable. On NATS this is JetStream.
   */
  durablePublish(
    subject: string,
    data: Uint8Array | string,
    options: DurablePublishOptions,
  ): Promise<{ seq: number; duplicate: boolean }>
  durableConsume(subject: string, handler: DurableHandler, options?: DurableConsumeOptions): Subscription
  /**
   * The last message the durable log holds on `subject` (one subject, no wildcard), or `undefined`
   * when it holds none: a stored answer read after the fact (a child run's result). On NATS a
   * direct get by subject, which permissions can grant per subject family.
   */
  durableLast(subject: string, options?: { signal?: AbortSignal }): Promise<StoredMessage | undefined>

  /** Resolves when everything published so far has reached the server. */
  flush(signal?: AbortSignal): Promise<void>
  /** Connection status changes (disconnect, reconnect). The in-process bus never reports any. */
  onStatus(listener: (status: BusStatus) => void): () => void
  /** Drains subscriptions and closes. Idempotent. */
  close(): Promise<void>
}
