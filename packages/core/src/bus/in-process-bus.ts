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
 * JetStream stream) with `msgId` de-duplication and pull-style consumers: each consumer handles one
 * message at a time, and a message not acknowledged within `ackWaitMs` is delivered again.
 */
import { type Clock, systemClock } from '../clock.ts'
import { AbortedError } from '../errors.ts'
import type {
  Bus,
  BusHeaders,
  BusMessage,
  BusStatus,
  DurableConsumeOptions,
  DurableHandler,
  DurableMessage,
  DurablePublishOptions,
  MessageHandler,
  PublishOptions,
  RequestOptions,
  SubscribeOptions,
  Subscription,
} from './bus.ts'
import {
  BusClosedError,
  BusNoRespondersError,
  BusPayloadTooLargeError,
  BusTimeoutError,
  DurableConsumerConflictError,
  DurableSubjectError,
  type HandlerErrorListener,
  InvalidSubjectError,
} from './errors.ts'
import {
  assertPublishSubject,
  assertSubscribeSubject,
  assertToken,
  subjectCovers,
  subjectMatches,
  tokensMatch,
} from './subjects.ts'

/** NATS's default `max_payload`. */
export const DEFAULT_MAX_PAYLOAD = 1024 * 1024
/** JetStream's default duplicate window. */
export const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000
/** JetStream's default `ack_wait`. */
export const DEFAULT_ACK_WAIT_MS = 30_000

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
const decoder = new TextDecoder()
const MSG_ID_HEADER = 'Nats-Msg-Id'

let busCounter = 0

class LocalMessage implements BusMessage {
  #text: string | undefined
  readonly subject: string
  readonly data: Uint8Array
  readonly headers: BusHeaders | undefined
  readonly reply: string | undefined
  readonly #bus: InProcessBus

  constructor(subject: string, data: Uint8Array, headers: BusHeaders | undefined, reply: string | undefined, bus: InProcessBus) {
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

const READY: Promise<void> = Promise.resolve()

class LocalSubscription implements Subscription {
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
    this.#onAbort = () => this.unsubscribe()
    signal.addEventListener('abort', this.#onAbort, { once: true })
  }

  unsubscribe(): void {
    if (this.closed) return
    this.closed = true
    if (this.#onAbort) this.#signal?.removeEventListener('abort', this.#onAbort)
    this.#detach(this)
  }
}

interface LogEntry {
  readonly seq: number
  readonly subject: string
  readonly data: Uint8Array
  readonly headers: BusHeaders
  tokens: string[] | undefined
}

/** One message handed to a consumer and not yet acknowledged. */
interface Pending {
  readonly entry: LogEntry
  deliveries: number
  done: boolean
  queued: boolean
  timer: unknown
}

interface Member {
  readonly handler: DurableHandler
  readonly subscription: LocalSubscription
  busy: boolean
}

/** The in-process counterpart of a JetStream pull consumer (durable when it has a name). */
class ConsumerGroup {
  readonly filter: string
  readonly filterTokens: string[] | undefined
  readonly durableName: string | undefined
  readonly ackWaitMs: number
  /** Next log sequence to look at. */
  cursor: number
  readonly members: Member[] = []
  roundRobin = 0
  readonly pending = new Map<number, Pending>()
  readonly redeliver: Pending[] = []

  constructor(filter: string, durableName: string | undefined, ackWaitMs: number, cursor: number) {
    this.filter = filter
    this.filterTokens = filter.includes('*') || filter.includes('>') ? filter.split('.') : undefined
    this.durableName = durableName
    this.ackWaitMs = ackWaitMs
    this.cursor = cursor
  }

  matches(entry: LogEntry): boolean {
    if (this.filterTokens === undefined) return entry.subject === this.filter
    if (entry.tokens === undefined) entry.tokens = entry.subject.split('.')
    return tokensMatch(this.filterTokens, entry.tokens)
  }
}

interface Settlement {
  ack(): void
  nak(delayMs: number | undefined): void
  working(): void
}

class LocalDurableMessage extends LocalMessage implements DurableMessage {
  readonly seq: number
  readonly #settlement: Settlement

  constructor(entry: LogEntry, bus: InProcessBus, settlement: Settlement) {
    super(entry.subject, entry.data, entry.headers, undefined, bus)
    this.seq = entry.seq
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

type Settle = (error: Error | undefined, reply?: BusMessage) => void

export class InProcessBus implements Bus {
  readonly name: string
  readonly maxPayload: number
  readonly #id = ++busCounter
  readonly #clock: Clock
  readonly #onHandlerError: HandlerErrorListener | undefined
  readonly #duplicateWindowMs: number
  readonly #maxDurableMessages: number
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
  readonly #log: LogEntry[] = []
  #firstSeq = 1
  #lastSeq = 0
  readonly #dedup = new Map<string, { seq: number; expiresAt: number }>()
  readonly #groups = new Set<ConsumerGroup>()
  readonly #durableGroups = new Map<string, ConsumerGroup>()

  constructor(options: InProcessBusOptions = {}) {
    this.name = options.name ?? 'in-process'
    this.maxPayload = options.maxPayload ?? DEFAULT_MAX_PAYLOAD
    this.#clock = options.clock ?? systemClock
    this.#onHandlerError = options.onHandlerError
    this.#duplicateWindowMs = options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS
    this.#maxDurableMessages = options.maxDurableMessages ?? 100_000
    this.#durableSubjects = options.durableSubjects
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
      this.#assertOpen('request')
      assertPublishSubject(subject)
      this.#assertNotDurable(subject)
      bytes = this.#toBytes(subject, data)
    } catch (error) {
      return Promise.reject(error)
    }
    const { signal, timeoutMs } = options
    if (signal?.aborted) return Promise.reject(abortedError(subject, signal))
    return new Promise<BusMessage>((resolve, reject) => {
      const inbox = `_INBOX.sbx${this.#id}.${++this.#inboxSeq}`
      let timer: unknown
      const onAbort = () => settle(abortedError(subject, signal))
      // Single exit: whichever of reply / timeout / abort / close comes first cleans everything up.
      const settle: Settle = (error, reply) => {
        if (!this.#inboxes.delete(inbox)) return
        if (timer !== undefined) this.#clock.clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        if (error) reject(error)
        else resolve(reply as BusMessage)
      }
      this.#inboxes.set(inbox, settle)
      const delivered = this.#route(new LocalMessage(subject, bytes, copyHeaders(options.headers), inbox, this))
      if (delivered === 0) return settle(new BusNoRespondersError(subject))
      timer = this.#clock.setTimeout(() => settle(new BusTimeoutError(subject, timeoutMs)), timeoutMs)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
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
    // Entries expire in insertion order (constant window), so pruning stops at the first live one.
    for (const [id, record] of this.#dedup) {
      if (record.expiresAt > now) break
      this.#dedup.delete(id)
    }
    const seen = this.#dedup.get(options.msgId)
    if (seen !== undefined) return { seq: seen.seq, duplicate: true }

    const seq = ++this.#lastSeq
    // The msgId travels as NATS's header so consumers see the same thing on both transports.
    const headers: BusHeaders = Object.freeze({ ...options.headers, [MSG_ID_HEADER]: options.msgId })
    const entry: LogEntry = { seq, subject, data: bytes, headers, tokens: undefined }
    this.#log.push(entry)
    this.#dedup.set(options.msgId, { seq, expiresAt: now + this.#duplicateWindowMs })
    this.#trimLog()
    for (const group of this.#groups) if (group.matches(entry)) this.#pump(group)
    // On NATS a core subscriber sees JetStream-bound publishes too; keep parity.
    this.#route(new LocalMessage(subject, bytes, headers, undefined, this))
    return { seq, duplicate: false }
  }

  durableConsume(subject: string, handler: DurableHandler, options: DurableConsumeOptions = {}): Subscription {
    this.#assertOpen('durableConsume')
    assertSubscribeSubject(subject)
    this.#assertDurable(subject)
    const { durableName, signal } = options
    if (durableName !== undefined) assertToken(durableName)
    const ackWaitMs = options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS

    let group = durableName === undefined ? undefined : this.#durableGroups.get(durableName)
    if (group !== undefined && group.filter !== subject) {
      throw new DurableConsumerConflictError(durableName as string, group.filter, subject)
    }
    const member: Member = {
      handler,
      busy: false,
      subscription: new LocalSubscription(subject, noop, undefined, () => this.#leave(group as ConsumerGroup, member)),
    }
    if (signal?.aborted) {
      member.subscription.closed = true
      return member.subscription
    }
    if (group === undefined) {
      const start = options.deliverAll ? this.#firstSeq : this.#lastSeq + 1
      group = new ConsumerGroup(subject, durableName, ackWaitMs, start)
      this.#groups.add(group)
      if (durableName !== undefined) this.#durableGroups.set(durableName, group)
    }
    group.members.push(member)
    if (signal) member.subscription.bindSignal(signal)
    this.#pump(group)
    return member.subscription
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
    for (const settle of [...this.#inboxes.values()]) settle(new BusClosedError('receive a reply'))
    this.#closing = (async () => {
      // Drain: let the deliveries already queued as microtasks reach their handlers first.
      await new Promise((resolve) => setTimeout(resolve, 0))
      for (const set of this.#literal.values()) for (const subscription of set) subscription.closed = true
      for (const subscription of this.#wildcard) subscription.closed = true
      this.#literal.clear()
      this.#wildcard.clear()
      for (const group of this.#groups) {
        for (const member of group.members) member.subscription.closed = true
        this.#disposeGroup(group)
      }
      this.#durableGroups.clear()
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

  // ---- durable consumers ----

  #pump(group: ConsumerGroup): void {
    if (this.#closed) return
    for (;;) {
      const member = nextIdleMember(group)
      if (member === undefined) return
      const pending = this.#nextPending(group)
      if (pending === undefined) return
      this.#deliver(group, member, pending)
    }
  }

  #nextPending(group: ConsumerGroup): Pending | undefined {
    while (group.redeliver.length > 0) {
      const pending = group.redeliver.shift() as Pending
      pending.queued = false
      if (!pending.done) return pending
    }
    if (group.cursor < this.#firstSeq) group.cursor = this.#firstSeq
    while (group.cursor <= this.#lastSeq) {
      const entry = this.#log[group.cursor - this.#firstSeq] as LogEntry
      group.cursor++
      if (!group.matches(entry)) continue
      const pending: Pending = { entry, deliveries: 0, done: false, queued: false, timer: undefined }
      group.pending.set(entry.seq, pending)
      return pending
    }
    return undefined
  }

  #deliver(group: ConsumerGroup, member: Member, pending: Pending): void {
    member.busy = true
    const delivery = ++pending.deliveries
    // Like JetStream, the ack wait runs from delivery: not acknowledged in time → delivered again.
    const redeliverAfter = (ms: number) => {
      this.#clearTimer(pending)
      pending.timer = this.#startTimer(() => {
        pending.timer = undefined
        this.#requeue(group, pending)
      }, ms)
    }
    redeliverAfter(group.ackWaitMs)
    // Only the current delivery may postpone or ask for redelivery (a stale one must not duplicate it).
    const current = () => !pending.done && !pending.queued && pending.deliveries === delivery
    const message = new LocalDurableMessage(pending.entry, this, {
      ack: () => {
        if (pending.done) return
        pending.done = true
        this.#clearTimer(pending)
        group.pending.delete(pending.entry.seq)
      },
      nak: (delayMs) => {
        if (!current()) return
        if (delayMs !== undefined && delayMs > 0) redeliverAfter(delayMs)
        else {
          this.#clearTimer(pending)
          this.#requeue(group, pending)
        }
      },
      working: () => {
        if (current()) redeliverAfter(group.ackWaitMs)
      },
    })
    queueMicrotask(async () => {
      try {
        if (!member.subscription.closed) await member.handler(message)
      } catch (error) {
        // Not acknowledged, so it comes back after the ack wait.
        this.#report(error, message.subject, group.filter, true)
      } finally {
        member.busy = false
        this.#pump(group)
      }
    })
  }

  #requeue(group: ConsumerGroup, pending: Pending): void {
    if (pending.done || pending.queued || !this.#groups.has(group)) return
    pending.queued = true
    group.redeliver.push(pending)
    this.#pump(group)
  }

  #leave(group: ConsumerGroup, member: Member): void {
    const index = group.members.indexOf(member)
    if (index !== -1) group.members.splice(index, 1)
    // A private consumer ends with its subscriber; a durable one keeps its place for the next.
    if (group.durableName === undefined) this.#disposeGroup(group)
  }

  #disposeGroup(group: ConsumerGroup): void {
    this.#groups.delete(group)
    for (const pending of group.pending.values()) this.#clearTimer(pending)
    group.pending.clear()
    group.redeliver.length = 0
  }

  #trimLog(): void {
    const max = this.#maxDurableMessages
    // Trim in batches so a full log does not cost an O(n) splice on every publish.
    if (this.#log.length <= max + Math.max(1, max >> 4)) return
    const drop = this.#log.length - max
    this.#log.splice(0, drop)
    this.#firstSeq += drop
  }

  #startTimer(fn: () => void, ms: number): unknown {
    const timer = this.#clock.setTimeout(fn, ms)
    // Waiting redeliveries must not keep the process alive on their own.
    ;(timer as { unref?: () => void } | undefined)?.unref?.()
    return timer
  }

  #clearTimer(pending: Pending): void {
    if (pending.timer === undefined) return
    this.#clock.clearTimeout(pending.timer)
    pending.timer = undefined
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

/** Why plain publish/request are refused on durable subjects (shared with the NATS bus). */
export const DURABLE_ONLY_REASON =
  'the subject belongs to the durable store: use durablePublish/durableConsume (on NATS, JetStream would store a plain publish without de-duplication and answer a request with its own publish ack)'

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

function nextIdleMember(group: ConsumerGroup): Member | undefined {
  const { members } = group
  const n = members.length
  for (let i = 0; i < n; i++) {
    const index = (group.roundRobin + i) % n
    const member = members[index] as Member
    if (!member.busy && !member.subscription.closed) {
      group.roundRobin = index + 1
      return member
    }
  }
  return undefined
}

function abortedError(subject: string, signal: AbortSignal | undefined): AbortedError {
  return new AbortedError(`Operation on "${subject}" was aborted.`, signal?.reason)
}
