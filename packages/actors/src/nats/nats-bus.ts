/**
 * The `Bus` contract on NATS (`@nats-io/transport-node` v3, JetStream for the durable path).
 *
 * Plain messages are core NATS: fast, at most once, and silently dropped while the client is
 * reconnecting (nats.js resets its outbound buffer at every dial attempt). Whatever must not be
 * lost goes through `durablePublish`: a JetStream publish with a `msgID`, retried (same id, so the
 * stream de-duplicates) until the server acknowledges it, across reconnects and server restarts.
 * `durableConsume` is a JetStream pull consumer (`durable-consumer.ts`) that is re-established
 * after every reconnect and recreated if the server lost it. The stream (`stream.ts`) is kept to
 * what nats-server 2.9 supports (one filter subject per consumer, no metadata, no compression).
 */
import { type JetStreamClient, type JetStreamManager, type JsMsg, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { type Msg, type MsgHdrs, type NatsConnection, headers as natsHeaders } from '@nats-io/transport-node'
import { AbortedError } from '@signalbox/core'
import {
  type Bus,
  BusClosedError,
  BusError,
  type BusHeaders,
  type BusMessage,
  BusPayloadTooLargeError,
  type BusStatus,
  createSubjects,
  DEFAULT_SUBJECT_PREFIX,
  type DurableConsumeOptions,
  type DurableHandler,
  type DurablePublishOptions,
  defaultDurableSubjects,
  InvalidSubjectError,
  type MessageHandler,
  type PublishOptions,
  type RequestManyOptions,
  type RequestOptions,
  type StoredMessage,
  type SubscribeOptions,
  type Subscription,
} from '@signalbox/core/bus'
import { asError, assertPublishSubject, assertSubscribeSubject, assertToken, sleep, untilAborted } from '@signalbox/core/internal'
import { withTimeout } from './async.ts'
import { ConnectionWatch, openConnection } from './connection.ts'
import { NatsDurableConsumer } from './durable-consumer.ts'
import { type DurablePublisher, publishUntilAcked } from './durable-publish.ts'
import { mapDurableReadError, mapNatsError, requestAborted } from './errors.ts'
import type { BusInternals } from './internals.ts'
import {
  ackConfirmed,
  fromNatsHeaders,
  headerSize,
  NatsMessage,
  NatsPlainSubscription,
  toBytes,
  toNatsHeaders,
} from './messages.ts'
import { DEFAULT_PULL_HEARTBEAT_MS, DEFAULT_SERVER_ACK_WAIT_MS, defaultConnectionName, type NatsBusOptions } from './options.ts'
import { natsRequest, natsRequestMany } from './request.ts'
import { awaitStream, defaultStreamName, ensurePlacedStream, StreamSubjects } from './stream.ts'

/** Reads of a message the leader holds before `durableLast` gives up on a lagging replica (about 2 s in all). */
const STALE_READ_ATTEMPTS = 12

/**
 * Connects, creates or updates the durable stream, and returns the bus.
 *
 * @example
 * ```ts
 * const bus = await connectNatsBus({ servers: 'nats://127.0.0.1:4222', name: 'booking-agent' })
 * const agent = createAgent({ provider, tools, reviewer: remoteReviewer({ bus }) })
 * connectAgent(agent, { bus }) // events out, steering and control in
 * // ...
 * await bus.close()
 * ```
 */
export async function connectNatsBus(options: NatsBusOptions): Promise<NatsBus> {
  const prefix = options.prefix ?? DEFAULT_SUBJECT_PREFIX
  createSubjects(prefix) // validates the prefix tokens
  const bus = new NatsBus(await openConnection(options), options, prefix)
  try {
    await untilAborted(bus.ensureStream(), options.signal, 'Setting up the durable stream')
  } catch (error) {
    await bus.close()
    if (AbortedError.is(error) || BusError.is(error)) throw error
    if (jetStreamDisabled(error)) {
      throw new BusError(
        'BUS_JETSTREAM_DISABLED',
        `The NATS server at ${String(options.servers).replace(/\/\/[^@/]*@/g, '//')} runs without JetStream, which signalbox needs for its durable stream "${bus.streamName}". Start it with JetStream on: nats-server -js`,
        { cause: error },
      )
    }
    throw new BusError('BUS_DURABLE_SETUP_FAILED', `Could not create or update stream "${bus.streamName}".`, { cause: error })
  }
  return bus
}

/** The server answered that JetStream is off (`nats-server` started without `-js`). */
function jetStreamDisabled(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (/jetstream (is )?not enabled/i.test(String((e as Error).message ?? e))) return true
  }
  return false
}

export class NatsBus implements Bus {
  readonly name: string
  readonly prefix: string
  readonly streamName: string
  /** The underlying connection, for what the bus does not cover (KV, object store). Do not close it directly. */
  readonly connection: NatsConnection
  readonly #js: JetStreamClient
  #jsm: Promise<JetStreamManager> | undefined
  readonly #options: NatsBusOptions
  readonly #watch: ConnectionWatch
  readonly #publisher: DurablePublisher
  readonly #configuredSubjects: string[]
  readonly #streamSubjects: StreamSubjects
  /** The stream's replicas as the server reported them at set-up: private consumers get as many. */
  #streamReplicas = 1
  readonly #consumers = new Set<NatsDurableConsumer>()
  readonly #settingUp = new Set<Promise<void>>()
  readonly #ackTasks = new Set<Promise<void>>()
  /** Fails in-flight requests at `close()` (a draining connection would let them run to their timeout). */
  readonly #pendingRequests = new Set<(error: Error) => void>()
  #maxPayload: number
  #handlerErrors = 0
  #closed = false
  #closing: Promise<void> | undefined
  #ensuring: Promise<void> | undefined

  constructor(connection: NatsConnection, options: NatsBusOptions, prefix: string) {
    this.connection = connection
    this.#options = options
    this.prefix = prefix
    this.name = options.name ?? defaultConnectionName()
    this.streamName = options.durable?.stream ?? defaultStreamName(prefix)
    this.#configuredSubjects = options.durable?.subjects ?? defaultDurableSubjects(prefix)
    for (const subject of this.#configuredSubjects) assertSubscribeSubject(subject)
    if (options.consumerPrefix !== undefined) assertToken(options.consumerPrefix)
    this.#streamSubjects = new StreamSubjects(this.#configuredSubjects)
    this.#maxPayload = connection.info?.max_payload ?? 1024 * 1024
    this.#js = jetstream(connection)
    this.#watch = new ConnectionWatch(connection, {
      onReconnect: () => {
        // The server may have restarted: check the stream, and re-establish every consumer
        // (their pull requests died with the old connection; an ephemeral one may be gone).
        void this.ensureStream().catch((error) => this.#watch.emit({ type: 'error', error: asError(error) }))
        for (const consumer of this.#consumers) consumer.restart()
      },
      onClosed: () => {
        this.#closed = true
      },
    })
    this.#publisher = {
      js: this.#js,
      watch: this.#watch,
      isClosed: () => this.#closed,
      maxPayload: () => this.maxPayload,
      ensureStream: () => this.ensureStream(),
    }
  }

  get maxPayload(): number {
    // The server announces its limit in INFO; remember it for while we are disconnected.
    const current = this.connection.info?.max_payload
    if (current !== undefined) this.#maxPayload = current
    return this.#maxPayload
  }

  /** The subjects the stream captures (after setup: as the server reports them). */
  get durableSubjects(): readonly string[] {
    return this.#streamSubjects.list
  }

  get handlerErrors(): number {
    return this.#handlerErrors
  }

  get closed(): boolean {
    return this.#closed
  }

  // ---- plain messages ----

  publish(subject: string, data: Uint8Array | string, options?: PublishOptions): void {
    this.#assertOpen('publish')
    assertPublishSubject(subject)
    if (options?.reply !== undefined) assertPublishSubject(options.reply)
    this.#streamSubjects.assertNotCaptured(subject)
    this.#send(subject, data, options?.headers, options?.reply)
  }

  subscribe(subject: string, handler: MessageHandler, options?: SubscribeOptions): Subscription {
    this.#assertOpen('subscribe')
    assertSubscribeSubject(subject)
    if (options?.queue !== undefined) assertToken(options.queue)
    const subscription = new NatsPlainSubscription(subject, options?.queue)
    if (options?.signal?.aborted) {
      subscription.closed = true
      subscription.ready = Promise.resolve()
      return subscription
    }
    const natsSubscription = this.connection.subscribe(subject, {
      ...(options?.queue !== undefined ? { queue: options.queue } : {}),
      callback: (error, msg) => {
        if (error) {
          // Terminal for the subscription (e.g. a permissions violation).
          subscription.closed = true
          this.#report(mapNatsError(error, subject, 'subscribe'), subject, subject, false)
          return
        }
        this.#invoke(handler, new NatsMessage(msg, this.#replyFor(msg), this.#internals), subject)
      },
    })
    subscription.bind(natsSubscription, options?.signal)
    // The SUB is processed once a PING sent after it is answered.
    subscription.ready = this.connection.flush().catch((error: unknown) => {
      throw mapNatsError(error, subject, 'subscribe')
    })
    subscription.ready.catch(() => {}) // nobody has to await it
    return subscription
  }

  async request(subject: string, data: Uint8Array | string, options: RequestOptions): Promise<BusMessage> {
    this.#assertOpen('request')
    assertPublishSubject(subject)
    this.#streamSubjects.assertNotCaptured(subject)
    const { signal, timeoutMs } = options
    const bytes = toBytes(data)
    const headers = toNatsHeaders(options.headers)
    this.#checkSize(subject, bytes, headers)
    if (signal?.aborted) throw requestAborted(subject, signal)
    const request = { subject, bytes, headers, timeoutMs, signal, inboxPrefix: this.#options.inboxPrefix }
    const reply = await natsRequest(this.connection, request, this.#pendingRequests, () => this.#closed)
    return new NatsMessage(reply, undefined, this.#internals)
  }

  async requestMany(subject: string, data: Uint8Array | string, options: RequestManyOptions): Promise<BusMessage[]> {
    this.#assertOpen('request')
    assertPublishSubject(subject)
    this.#streamSubjects.assertNotCaptured(subject)
    const bytes = toBytes(data)
    const headers = toNatsHeaders(options.headers)
    this.#checkSize(subject, bytes, headers)
    if (options.signal?.aborted) throw requestAborted(subject, options.signal)
    const replies = await natsRequestMany(
      this.connection,
      { ...options, subject, bytes, headers, inboxPrefix: this.#options.inboxPrefix },
      this.#pendingRequests,
    )
    return replies.map((reply) => new NatsMessage(reply, undefined, this.#internals))
  }

  // ---- durable path ----

  async durablePublish(
    subject: string,
    data: Uint8Array | string,
    options: DurablePublishOptions,
  ): Promise<{ seq: number; duplicate: boolean }> {
    this.#assertOpen('durablePublish')
    const { signal, msgId } = options
    if (signal?.aborted) throw new AbortedError(`Durable publish on "${subject}" was aborted.`, signal.reason)
    assertPublishSubject(subject)
    this.#streamSubjects.assertCovers(subject)
    if (typeof msgId !== 'string' || msgId.length === 0) {
      throw new InvalidSubjectError(String(msgId), 'durablePublish needs a non-empty msgId')
    }
    const bytes = toBytes(data)
    const headers = toNatsHeaders(options.headers) ?? natsHeaders()
    headers.set('Nats-Msg-Id', msgId)
    this.#checkSize(subject, bytes, headers)
    // A consumer set up on this bus before this call must see the message (its creation is async).
    if (this.#settingUp.size > 0) await Promise.allSettled(this.#settingUp)
    const attemptTimeoutMs = this.#options.publishAttemptTimeoutMs ?? 2_000
    return publishUntilAcked(this.#publisher, { subject, bytes, headers, msgId, signal, attemptTimeoutMs })
  }

  durableConsume(subject: string, handler: DurableHandler, options: DurableConsumeOptions = {}): Subscription {
    this.#assertOpen('durableConsume')
    assertSubscribeSubject(subject)
    this.#streamSubjects.assertCovers(subject)
    if (options.durableName !== undefined) assertToken(options.durableName)
    if (options.purpose !== undefined) assertToken(options.purpose)
    const consumer = new NatsDurableConsumer(this.#internals, subject, handler, options, {
      pullBatch: this.#options.pullBatch ?? 16,
      pullExpiresMs: this.#options.pullExpiresMs ?? 10_000,
      pullHeartbeatMs: this.#options.pullHeartbeatMs ?? DEFAULT_PULL_HEARTBEAT_MS,
      ephemeralInactiveMs: this.#options.ephemeralInactiveMs ?? 120_000,
      serverAckWaitMs: this.#options.serverAckWaitMs ?? DEFAULT_SERVER_ACK_WAIT_MS,
      // As many copies as the stream keeps (an operator may have made it R3): a consumer kept by
      // one node stops delivering while that node is down.
      replicas: Math.max(this.#options.durable?.replicas ?? 1, this.#streamReplicas),
      consumerPrefix: this.#options.consumerPrefix,
    })
    if (options.signal?.aborted) {
      consumer.closed = true
      return consumer
    }
    this.#consumers.add(consumer)
    consumer.start()
    const { ready } = consumer
    this.#settingUp.add(ready)
    ready.then(
      () => this.#settingUp.delete(ready),
      () => this.#settingUp.delete(ready),
    )
    return consumer
  }

  async durableLast(subject: string, options: { signal?: AbortSignal } = {}): Promise<StoredMessage | undefined> {
    this.#assertOpen('durableLast')
    const { signal } = options
    if (signal?.aborted) throw requestAborted(subject, signal)
    assertPublishSubject(subject)
    this.#streamSubjects.assertCovers(subject)
    const read = (async () => {
      const jsm = await this.#manager()
      for (let attempt = 1; ; attempt++) {
        // By subject in the API subject (`$JS.API.DIRECT.GET.<stream>.<subject>`): a grant can name the family.
        const found = await jsm.direct.getMessage(this.streamName, { last_by_subj: subject })
        if (found !== null) {
          return {
            subject: found.subject,
            data: found.data,
            headers: fromNatsHeaders(found.header),
            seq: found.seq,
            storedAt: found.time.getTime(),
          }
        }
        // Any replica may answer a direct get, also one that has not applied a message the leader
        // acknowledged already (a cluster): "nothing" holds only once the leader says so. Stream
        // info is answered by the leader, and every role may ask it.
        const info = await jsm.streams.info(this.streamName, { subjects_filter: subject })
        if ((info.state.subjects?.[subject] ?? 0) === 0) return undefined
        if (attempt >= STALE_READ_ATTEMPTS) {
          throw new Error(`the stream's replicas have not caught up with ${subject} after ${attempt} reads`)
        }
        // The lagging replica catches up in moments (the next read may also go to another one).
        await sleep(Math.min(250, 5 * 2 ** attempt), signal ? { signal } : {})
      }
    })()
    try {
      return await untilAborted(read, signal, 'Durable read')
    } catch (error) {
      throw mapDurableReadError(error, subject)
    }
  }

  /** Resolves when everything published so far reached the server and every consumer made so far is active. */
  async flush(signal?: AbortSignal): Promise<void> {
    this.#assertOpen('flush')
    const work = (async () => {
      if (this.#settingUp.size > 0) await Promise.allSettled(this.#settingUp)
      await this.connection.flush()
    })()
    try {
      await untilAborted(work, signal, 'Flush')
    } catch (error) {
      if (AbortedError.is(error)) throw error
      throw mapNatsError(error, '', 'flush')
    }
  }

  onStatus(listener: (status: BusStatus) => void): () => void {
    return this.#watch.onStatus(listener)
  }

  close(): Promise<void> {
    if (this.#closing) return this.#closing
    this.#closing = (async () => {
      this.#closed = true
      for (const fail of [...this.#pendingRequests]) fail(new BusClosedError('receive a reply'))
      const cleanups = [...this.#consumers].map((consumer) => consumer.shutdown())
      const drainTimeout = this.#options.drainTimeoutMs ?? 5_000
      await withTimeout(Promise.allSettled([...cleanups, ...this.#ackTasks]), drainTimeout)
      if (!this.connection.isClosed()) {
        // Drain hands queued messages to their handlers and flushes what we published; a
        // disconnected client cannot finish, so it is bounded.
        await withTimeout(
          this.connection.drain().catch(() => {}),
          drainTimeout,
        )
        if (!this.connection.isClosed()) await this.connection.close().catch(() => {})
      }
      this.#watch.markClosed()
    })()
    return this.#closing
  }

  /** Creates the stream, or adds our subjects and limits to an existing one (other subjects are kept). */
  ensureStream(): Promise<void> {
    if (this.#ensuring) return this.#ensuring
    this.#ensuring = (async () => {
      const jsm = await this.#manager()
      const durable = this.#options.durable ?? {}
      const { subjects, replicas } =
        durable.access === 'check'
          ? await awaitStream(jsm, this.streamName, this.#watch, this.#options.signal, durable.onWaitingForStream)
          : await ensurePlacedStream(jsm, this.streamName, this.#configuredSubjects, durable, this.#watch, this.#options.signal)
      this.#streamSubjects.set(subjects)
      this.#streamReplicas = replicas
    })().finally(() => {
      this.#ensuring = undefined
    })
    return this.#ensuring
  }

  /** The JetStream manager on this bus's connection (streams, consumers), e.g. for inspecting the stream. */
  manager(): Promise<JetStreamManager> {
    return this.#manager()
  }

  #manager(): Promise<JetStreamManager> {
    if (this.#jsm === undefined) {
      // checkAPI off: the first real call reports a missing JetStream anyway.
      this.#jsm = jetstreamManager(this.connection, { checkAPI: false })
    }
    return this.#jsm
  }

  // ---- internals shared with the consumers and messages ----

  /** What messages and consumers may use of the bus, kept off its public surface. */
  readonly #internals: BusInternals = {
    connection: () => this.connection,
    streamName: () => this.streamName,
    js: () => this.#js,
    manager: () => this.#manager(),
    respond: (subject, data, headers) => {
      this.#assertOpen('respond')
      this.#send(subject, data, headers, undefined)
    },
    ack: (msg, ackWaitMs) => this.#ack(msg, ackWaitMs),
    report: (error, subject, subscription, durable) => this.#report(error, subject, subscription, durable),
    // Consumer setup problems are operational, not handler errors: they go to status listeners.
    emitError: (error) => this.#watch.emit({ type: 'error', error }),
    forget: (consumer) => this.#consumers.delete(consumer),
    pause: (ms) => this.#watch.pause(ms, undefined).catch(() => {}),
  }

  #send(subject: string, data: Uint8Array | string, headers: BusHeaders | undefined, reply: string | undefined): void {
    const bytes = toBytes(data)
    const natsHeaders = toNatsHeaders(headers)
    this.#checkSize(subject, bytes, natsHeaders)
    try {
      this.connection.publish(subject, bytes, {
        ...(reply !== undefined ? { reply } : {}),
        ...(natsHeaders ? { headers: natsHeaders } : {}),
      })
    } catch (error) {
      throw mapNatsError(error, subject, 'publish')
    }
  }

  /** A confirmed ack (see `ackConfirmed`), which `close()` waits for. */
  #ack(msg: JsMsg, ackWaitMs: number): void {
    const reply = (msg as unknown as { reply?: unknown }).reply
    if (typeof reply !== 'string' || reply.length === 0) {
      msg.ack()
      return
    }
    const keepTrying = () => !this.#closed || this.#closing !== undefined
    const task = ackConfirmed(this.connection, this.#watch, reply, ackWaitMs, keepTrying)
    this.#ackTasks.add(task)
    void task.finally(() => this.#ackTasks.delete(task))
  }

  #invoke(handler: MessageHandler, message: NatsMessage, subscription: string): void {
    try {
      const result = handler(message)
      if (result !== undefined && typeof (result as Promise<void>).then === 'function') {
        ;(result as Promise<void>).then(undefined, (error: unknown) => this.#report(error, message.subject, subscription, false))
      }
    } catch (error) {
      this.#report(error, message.subject, subscription, false)
    }
  }

  #report(error: unknown, subject: string, subscription: string, durable: boolean): void {
    this.#handlerErrors++
    const listener = this.#options.onHandlerError
    if (listener === undefined) return
    try {
      listener(error, { subject, subscription, durable })
    } catch {
      // ignored: reporting must not break delivery
    }
  }

  /** A plain subscriber must not answer a JetStream publish (its reply subject is the publisher's ack inbox). */
  #replyFor(msg: Msg): string | undefined {
    if (msg.reply === undefined || msg.reply === '') return undefined
    return this.#streamSubjects.captures(msg.subject) ? undefined : msg.reply
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw new BusClosedError(operation)
  }

  #checkSize(subject: string, bytes: Uint8Array, headers: MsgHdrs | undefined): void {
    // Checked here so the caller gets our error (the client would throw InvalidArgumentError).
    const size = bytes.length + (headers ? headerSize(headers) : 0)
    const max = this.maxPayload
    if (size > max) throw new BusPayloadTooLargeError(subject, size, max)
  }
}
