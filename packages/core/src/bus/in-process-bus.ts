/**
 * The embedded default bus: the `Bus` contract without a server. It sits on the agents' hot path,
 * so a publish is: one regex check, a map lookup (plus one split when wildcard subscriptions
 * exist) and one microtask that calls the handlers in publish order. Payload bytes are passed by
 * reference, not copied.
 *
 * Semantics follow NATS so code moves between transports unchanged: delivery is asynchronous,
 * handlers are called in publish order per subscription and are not awaited, a throwing handler
 * never reaches the publisher, queue groups give each message to one member, a request with no
 * subscriber fails at once. The durable path is an in-memory log shared by all subjects (like one
 * JetStream stream, `durable-log.ts`) with `msgId` de-duplication and pull-style consumers
 * (`consumer-groups.ts`): each consumer handles one message at a time, and a message not
 * acknowledged within `ackWaitMs` is delivered again.
 */
import { whenAborted } from '../abort.ts'
import { type Clock, systemClock } from '../clock.ts'
import { AbortedError } from '../errors.ts'
import {
  type Bus,
  type BusHeaders,
  type BusMessage,
  type BusStatus,
  DEFAULT_DUPLICATE_WINDOW_MS,
  DEFAULT_MAX_PAYLOAD,
  DEFAULT_STALL_MS,
  DURABLE_ONLY_REASON,
  type DurableConsumeOptions,
  type DurableHandler,
  type DurablePublishOptions,
  type MessageHandler,
  type PublishOptions,
  type RequestManyOptions,
  type RequestOptions,
  type StoredMessage,
  type SubscribeOptions,
  type Subscription,
} from './bus.ts'
import { ConsumerGroups } from './consumer-groups.ts'
import { DurableLog } from './durable-log.ts'
import {
  BusClosedError,
  BusNoRespondersError,
  BusPayloadTooLargeError,
  BusTimeoutError,
  DurableSubjectError,
  type HandlerErrorListener,
  InvalidSubjectError,
} from './errors.ts'
import { LocalMessage, LocalSubscription } from './local-messages.ts'
import {
  assertPublishSubject,
  assertSubscribeSubject,
  assertToken,
  subjectCovers,
  subjectMatches,
  tokensMatch,
} from './subjects.ts'

export interface InProcessBusOptions {
  /** Reported as `bus.name`. Default `in-process`. */
  name?: string
  /** Largest payload in bytes. Default 1 MiB, like NATS. */
  maxPayload?: number
  /** Called when a handler throws or rejects. Default: ignored (but counted in `handlerErrors`). */
  onHandlerError?: HandlerErrorListener
  /** `msgId` de-duplication window of `durablePublish`. Default 2 min, like JetStream. */
  duplicateWindowMs?: number
  /** The durable log keeps at most this many messages (oldest dropped first). Default 100 000. */
  maxDurableMessages?: number
  /**
   * Mirror a NATS deployment's durable subjects (e.g. `defaultDurableSubjects(prefix)`): durable
   * calls outside them throw `DurableSubjectError` and plain publish/request inside them throw
   * `InvalidSubjectError`, exactly as on NATS. Default: every subject is durable-capable.
   */
  durableSubjects?: readonly string[]
  /** Timers (request timeouts, ack waits, de-dup window). Default: the system clock. */
  clock?: Clock
}

const encoder = new TextEncoder()

let busCounter = 0

type Settle = (error: Error | undefined, reply?: BusMessage) => void

export class InProcessBus implements Bus {
  readonly name: string
  readonly maxPayload: number
  readonly #id = ++busCounter
  readonly #clock: Clock
  readonly #onHandlerError: HandlerErrorListener | undefined
  readonly #durableSubjects: readonly string[] | undefined
  #handlerErrors = 0
  #closed = false
  #closing: Promise<void> | undefined

  // Plain subscriptions: literal subjects by map lookup, wildcard ones scanned.
  readonly #literal = new Map<string, Set<LocalSubscription>>()
  readonly #wildcard = new Set<LocalSubscription>()
  readonly #queueCursor = new Map<string, number>()
  // Pending requests by private inbox subject.
  readonly #inboxes = new Map<string, Settle>()
  #inboxSeq = 0

  // Durable path.
  readonly #log: DurableLog
  readonly #groups: ConsumerGroups

  constructor(options: InProcessBusOptions = {}) {
    this.name = options.name ?? 'in-process'
    this.maxPayload = options.maxPayload ?? DEFAULT_MAX_PAYLOAD
    this.#clock = options.clock ?? systemClock
    this.#onHandlerError = options.onHandlerError
    this.#durableSubjects = options.durableSubjects
    this.#log = new DurableLog(options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS, options.maxDurableMessages ?? 100_000)
    this.#groups = new ConsumerGroups({
      log: this.#log,
      clock: this.#clock,
      publish: (subject, data, publishOptions) => this.publish(subject, data, publishOptions),
      report: (error, subject, subscription, durable) => this.#report(error, subject, subscription, durable),
    })
  }

  /** How many handler calls threw or rejected so far. */
  get handlerErrors(): number {
    return this.#handlerErrors
  }

  get closed(): boolean {
    return this.#closed
  }

  publish(subject: string, data: Uint8Array | string, options?: PublishOptions): void {
    this.#assertOpen('publish')
    assertPublishSubject(subject)
    if (options?.reply !== undefined) assertPublishSubject(options.reply)
    this.#assertNotDurable(subject)
    const bytes = this.#toBytes(subject, data)
    const headers = copyHeaders(options?.headers)
    const settle = this.#inboxes.get(subject)
    if (settle !== undefined) {
      settle(undefined, new LocalMessage(subject, bytes, headers, options?.reply, this))
      return
    }
    this.#route(new LocalMessage(subject, bytes, headers, options?.reply, this))
  }

  subscribe(subject: string, handler: MessageHandler, options?: SubscribeOptions): Subscription {
    this.#assertOpen('subscribe')
    assertSubscribeSubject(subject)
    if (options?.queue !== undefined) assertToken(options.queue)
    const subscription = new LocalSubscription(subject, handler, options?.queue, this.#detach)
    if (options?.signal?.aborted) {
      subscription.closed = true
      return subscription
    }
    if (subscription.tokens !== undefined) {
      this.#wildcard.add(subscription)
    } else {
      const set = this.#literal.get(subject)
      if (set === undefined) this.#literal.set(subject, new Set([subscription]))
      else set.add(subscription)
    }
    if (options?.signal) subscription.bindSignal(options.signal)
    return subscription
  }

  request(subject: string, data: Uint8Array | string, options: RequestOptions): Promise<BusMessage> {
    let bytes: Uint8Array
    try {
      bytes = this.#requestBytes(subject, data)
    } catch (error) {
      return Promise.reject(error)
    }
    const { signal, timeoutMs } = options
    if (signal?.aborted) return Promise.reject(abortedError(subject, signal))
    return new Promise<BusMessage>((resolve, reject) => {
      const inbox = `_INBOX.sbx${this.#id}.${++this.#inboxSeq}`
      let timer: unknown
      let stopWatching: (() => void) | undefined
      const onAbort = () => settle(abortedError(subject, signal))
      // Single exit: whichever of reply / timeout / abort / close comes first cleans everything up.
      const settle: Settle = (error, reply) => {
        if (!this.#inboxes.delete(inbox)) return
        if (timer !== undefined) this.#clock.clearTimeout(timer)
        stopWatching?.()
        if (error) reject(error)
        else resolve(reply as BusMessage)
      }
      this.#inboxes.set(inbox, settle)
      const delivered = this.#route(new LocalMessage(subject, bytes, copyHeaders(options.headers), inbox, this))
      if (delivered === 0) return settle(new BusNoRespondersError(subject))
      timer = this.#clock.setTimeout(() => settle(new BusTimeoutError(subject, timeoutMs)), timeoutMs)
      // One listener on a signal many requests share (see `whenAborted`).
      if (signal) stopWatching = whenAborted(signal, onAbort)
    })
  }

  requestMany(subject: string, data: Uint8Array | string, options: RequestManyOptions): Promise<BusMessage[]> {
    let bytes: Uint8Array
    try {
      bytes = this.#requestBytes(subject, data)
    } catch (error) {
      return Promise.reject(error)
    }
    const { signal, timeoutMs } = options
    if (signal?.aborted) return Promise.reject(abortedError(subject, signal))
    return new Promise<BusMessage[]>((resolve, reject) => {
      const inbox = `_INBOX.sbx${this.#id}.${++this.#inboxSeq}`
      const replies: BusMessage[] = []
      // Here every recipient is known: the gathering ends as soon as each of them replied.
      let expected = Number.POSITIVE_INFINITY
      let timer: unknown
      let stall: unknown
      let stopWatching: (() => void) | undefined
      const onAbort = () => finish(abortedError(subject, signal))
      const finish = (error?: Error) => {
        if (!this.#inboxes.delete(inbox)) return
        if (timer !== undefined) this.#clock.clearTimeout(timer)
        if (stall !== undefined) this.#clock.clearTimeout(stall)
        stopWatching?.()
        if (error) reject(error)
        else resolve(replies)
      }
      this.#inboxes.set(inbox, (error, reply) => {
        if (error) return finish(error)
        replies.push(reply as BusMessage)
        if (replies.length >= Math.min(expected, options.maxReplies ?? Number.POSITIVE_INFINITY)) return finish()
        if (stall !== undefined) this.#clock.clearTimeout(stall)
        stall = this.#clock.setTimeout(() => finish(), options.stallMs ?? DEFAULT_STALL_MS)
      })
      const delivered = this.#route(new LocalMessage(subject, bytes, copyHeaders(options.headers), inbox, this))
      if (delivered === 0) return finish(options.requireReply ? new BusNoRespondersError(subject) : undefined)
      expected = delivered
      timer = this.#clock.setTimeout(
        () => finish(options.requireReply && replies.length === 0 ? new BusTimeoutError(subject, timeoutMs) : undefined),
        timeoutMs,
      )
      if (signal) stopWatching = whenAborted(signal, onAbort)
    })
  }

  /** What a request may be sent as: checked like a publish, on an open bus, off the durable subjects. */
  #requestBytes(subject: string, data: Uint8Array | string): Uint8Array {
    this.#assertOpen('request')
    assertPublishSubject(subject)
    this.#assertNotDurable(subject)
    return this.#toBytes(subject, data)
  }

  async durablePublish(
    subject: string,
    data: Uint8Array | string,
    options: DurablePublishOptions,
  ): Promise<{ seq: number; duplicate: boolean }> {
    this.#assertOpen('durablePublish')
    if (options.signal?.aborted) throw abortedError(subject, options.signal)
    assertPublishSubject(subject)
    this.#assertDurable(subject)
    if (typeof options.msgId !== 'string' || options.msgId.length === 0) {
      throw new InvalidSubjectError(String(options.msgId), 'durablePublish needs a non-empty msgId')
    }
    const bytes = this.#toBytes(subject, data)
    const now = this.#clock.now()
    const seen = this.#log.duplicateOf(options.msgId, now)
    if (seen !== undefined) return { seq: seen, duplicate: true }
    const entry = this.#log.append(subject, bytes, options.headers, options.msgId, now)
    this.#groups.appended(entry)
    // On NATS a core subscriber sees JetStream-bound publishes too; keep parity.
    this.#route(new LocalMessage(subject, entry.data, entry.headers, undefined, this))
    return { seq: entry.seq, duplicate: false }
  }

  durableConsume(subject: string, handler: DurableHandler, options: DurableConsumeOptions = {}): Subscription {
    this.#assertOpen('durableConsume')
    assertSubscribeSubject(subject)
    this.#assertDurable(subject)
    if (options.durableName !== undefined) assertToken(options.durableName)
    return this.#groups.join(subject, handler, options)
  }

  async durableLast(subject: string, options: { signal?: AbortSignal } = {}): Promise<StoredMessage | undefined> {
    this.#assertOpen('durableLast')
    if (options.signal?.aborted) throw abortedError(subject, options.signal)
    assertPublishSubject(subject)
    this.#assertDurable(subject)
    const entry = this.#log.lastOn(subject)
    if (entry === undefined) return undefined
    return { subject: entry.subject, data: entry.data, headers: entry.headers, seq: entry.seq, storedAt: entry.storedAt }
  }

  flush(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(new AbortedError('Flush was aborted.', signal.reason))
    if (this.#closed) return Promise.reject(new BusClosedError('flush'))
    // Everything is "at the server" as soon as publish returns; deliveries are already queued.
    return Promise.resolve()
  }

  onStatus(_listener: (status: BusStatus) => void): () => void {
    // No connection, so nothing to report.
    return noop
  }

  close(): Promise<void> {
    if (this.#closing) return this.#closing
    this.#closed = true
    this.#groups.stop()
    for (const settle of [...this.#inboxes.values()]) settle(new BusClosedError('receive a reply'))
    this.#closing = (async () => {
      // Drain: let the deliveries already queued as microtasks reach their handlers first.
      await new Promise((resolve) => setTimeout(resolve, 0))
      for (const set of this.#literal.values()) for (const subscription of set) subscription.closed = true
      for (const subscription of this.#wildcard) subscription.closed = true
      this.#literal.clear()
      this.#wildcard.clear()
      this.#groups.dispose()
    })()
    return this.#closing
  }

  // ---- plain routing ----

  /** Queues the message for every matching subscriber (one per queue group); returns how many. */
  #route(message: LocalMessage): number {
    const literal = this.#literal.get(message.subject)
    if (literal === undefined && this.#wildcard.size === 0) return 0
    const targets: LocalSubscription[] = []
    let queues: Map<string, LocalSubscription[]> | undefined
    if (literal !== undefined) {
      for (const subscription of literal) {
        if (subscription.queue === undefined) targets.push(subscription)
        else queues = addQueueMember(queues, subscription)
      }
    }
    if (this.#wildcard.size > 0) {
      const tokens = message.subject.split('.')
      for (const subscription of this.#wildcard) {
        if (!tokensMatch(subscription.tokens as string[], tokens)) continue
        if (subscription.queue === undefined) targets.push(subscription)
        else queues = addQueueMember(queues, subscription)
      }
    }
    if (queues !== undefined) {
      for (const [queue, members] of queues) {
        // Round-robin is deterministic and spreads load evenly; members are in subscribe order.
        const next = this.#queueCursor.get(queue) ?? 0
        this.#queueCursor.set(queue, next + 1)
        targets.push(members[next % members.length] as LocalSubscription)
      }
    }
    if (targets.length === 0) return 0
    queueMicrotask(() => {
      for (const subscription of targets) this.#invoke(subscription, message)
    })
    return targets.length
  }

  #invoke(subscription: LocalSubscription, message: LocalMessage): void {
    if (subscription.closed) return
    try {
      const result = subscription.handler(message)
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        ;(result as Promise<void>).then(undefined, (error: unknown) =>
          this.#report(error, message.subject, subscription.subject, false),
        )
      }
    } catch (error) {
      this.#report(error, message.subject, subscription.subject, false)
    }
  }

  readonly #detach = (subscription: LocalSubscription): void => {
    if (subscription.tokens !== undefined) {
      this.#wildcard.delete(subscription)
      return
    }
    const set = this.#literal.get(subscription.subject)
    if (set === undefined) return
    set.delete(subscription)
    if (set.size === 0) this.#literal.delete(subscription.subject)
  }

  #report(error: unknown, subject: string, subscription: string, durable: boolean): void {
    this.#handlerErrors++
    if (this.#onHandlerError === undefined) return
    try {
      this.#onHandlerError(error, { subject, subscription, durable })
    } catch {
      // A failing error listener must not break delivery either.
    }
  }

  // ---- checks ----

  #assertOpen(operation: string): void {
    if (this.#closed) throw new BusClosedError(operation)
  }

  #toBytes(subject: string, data: Uint8Array | string): Uint8Array {
    // No copy (hot path): subscribers get the publisher's bytes, so a publisher must not reuse a
    // buffer it has published (protocol messages are encoded fresh each time).
    const bytes = typeof data === 'string' ? encoder.encode(data) : data
    if (bytes.length > this.maxPayload) throw new BusPayloadTooLargeError(subject, bytes.length, this.maxPayload)
    return bytes
  }

  #assertDurable(subject: string): void {
    const durable = this.#durableSubjects
    if (durable !== undefined && !durable.some((pattern) => subjectCovers(pattern, subject))) {
      throw new DurableSubjectError(subject, durable)
    }
  }

  #assertNotDurable(subject: string): void {
    const durable = this.#durableSubjects
    if (durable?.some((pattern) => subjectMatches(pattern, subject))) {
      throw new InvalidSubjectError(subject, DURABLE_ONLY_REASON)
    }
  }
}

export function createInProcessBus(options?: InProcessBusOptions): InProcessBus {
  return new InProcessBus(options)
}

function noop(): void {}

function copyHeaders(headers: BusHeaders | undefined): BusHeaders | undefined {
  return headers === undefined ? undefined : Object.freeze({ ...headers })
}

function addQueueMember(
  queues: Map<string, LocalSubscription[]> | undefined,
  subscription: LocalSubscription,
): Map<string, LocalSubscription[]> {
  const map = queues ?? new Map<string, LocalSubscription[]>()
  const queue = subscription.queue as string
  const members = map.get(queue)
  if (members === undefined) map.set(queue, [subscription])
  else members.push(subscription)
  return map
}

function abortedError(subject: string, signal: AbortSignal | undefined): AbortedError {
  return new AbortedError(`Operation on "${subject}" was aborted.`, signal?.reason)
}
