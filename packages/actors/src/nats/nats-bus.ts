/**
 * The `Bus` contract on NATS (`@nats-io/transport-node` v3, JetStream for the durable path).
 *
 * Plain messages are core NATS: fast, at most once, and silently dropped while the client is
 * reconnecting (nats.js resets its outbound buffer at every dial attempt). Whatever must not be
 * lost goes through `durablePublish`: a JetStream publish with a `msgID`, retried (same id, so the
 * stream de-duplicates) until the server acknowledges it, across reconnects and server restarts.
 * `durableConsume` is a JetStream pull consumer that is re-established after every reconnect and
 * recreated if the server lost it. The stream is kept to what nats-server 2.9 supports (one
 * filter subject per consumer, no metadata, no compression).
 */
import { randomBytes } from 'node:crypto'
import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerMessages,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  jetstream,
  jetstreamManager,
  ReplayPolicy,
  RetentionPolicy,
  StorageType,
  type StreamInfo,
} from '@nats-io/jetstream'
import {
  createInbox,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription as NatsSubscription,
  nanos,
  errors as natsErrors,
  headers as natsHeaders,
} from '@nats-io/transport-node'
import {
  AbortedError,
  assertPublishSubject,
  assertSubscribeSubject,
  assertToken,
  type Bus,
  BusClosedError,
  BusError,
  type BusHeaders,
  type BusMessage,
  BusNoRespondersError,
  BusPayloadTooLargeError,
  type BusStatus,
  BusTimeoutError,
  createSubjects,
  DEFAULT_ACK_WAIT_MS,
  DEFAULT_DUPLICATE_WINDOW_MS,
  DEFAULT_SUBJECT_PREFIX,
  DURABLE_ONLY_REASON,
  type DurableConsumeOptions,
  DurableConsumerConflictError,
  type DurableHandler,
  type DurableMessage,
  type DurablePublishOptions,
  DurableSubjectError,
  defaultDurableSubjects,
  type HandlerErrorListener,
  InvalidSubjectError,
  type MessageHandler,
  type PublishOptions,
  type RequestOptions,
  type SubscribeOptions,
  type Subscription,
  subjectCovers,
  subjectMatches,
  untilAborted,
} from '@signalbox/core'
import { classifyConnectError, dialNats, redactUrls } from './connect-errors.ts'
import { credentialOf, type NatsCredentialOptions, natsConnectOptions, serverList } from './credentials.ts'

export interface NatsDurableOptions {
  /** JetStream stream name. Default `SIGNALBOX` for the default prefix, else derived from the prefix. */
  stream?: string
  /** Subjects the stream captures. Default `defaultDurableSubjects(prefix)`. */
  subjects?: string[]
  /** `msgId` de-duplication window. Default 2 min. */
  duplicateWindowMs?: number
  /** Drop stored messages older than this. Default: keep (limits by age off). */
  maxAgeMs?: number
  /** Default `file` (survives server restarts). */
  storage?: 'file' | 'memory'
}

export interface NatsBusOptions {
  servers: string | string[]
  /** Connection name (shown by the server's monitoring). Default `signalbox-<pid>`. */
  name?: string
  /** Subject prefix. Default `signalbox.v1`. */
  prefix?: string
  durable?: NatsDurableOptions
  /** Aborts connecting (and the first stream setup). */
  signal?: AbortSignal
  user?: string
  pass?: string
  token?: string
  /** Creds file, nkey, TLS... as the `nats` CLI takes them (`natsCredentialsFromEnv` reads its variables). */
  credentials?: NatsCredentialOptions
  /** Wait between reconnect attempts. Default 250 ms (the client's 2 s is slow for agents). */
  reconnectTimeWaitMs?: number
  /** Client PING interval, which bounds how long a dead (not closed) server goes unnoticed. Default 10 s. */
  pingIntervalMs?: number
  /** Called when a handler throws or rejects. Default: ignored (but counted in `handlerErrors`). */
  onHandlerError?: HandlerErrorListener
  /** How long one `durablePublish` attempt waits for the stream's ack before retrying. Default 2 s. */
  publishAttemptTimeoutMs?: number
  /** `close()` gives draining this long before closing hard (a disconnected client cannot drain). Default 5 s. */
  drainTimeoutMs?: number
  /** Pull request lifetime of durable consumers (idle heartbeats at half of it). Default 10 s. */
  pullExpiresMs?: number
  /** Messages a durable consumer buffers ahead of its handler. Default 16. */
  pullBatch?: number
  /** A private (ephemeral) consumer whose client vanished is deleted by the server after this. Default 2 min. */
  ephemeralInactiveMs?: number
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()
const ACK = encoder.encode('+ACK')

/** The stream name for a prefix: `SIGNALBOX` for the default one, so deployments with other prefixes never share (and rewrite) a stream. */
export function defaultStreamName(prefix: string): string {
  if (prefix === DEFAULT_SUBJECT_PREFIX) return 'SIGNALBOX'
  return `SIGNALBOX_${prefix.toUpperCase().replace(/[^A-Z0-9_-]/g, '_')}`
}

/** Connects, creates or updates the durable stream, and returns the bus. */
export async function connectNatsBus(options: NatsBusOptions): Promise<NatsBus> {
  const prefix = options.prefix ?? DEFAULT_SUBJECT_PREFIX
  createSubjects(prefix) // validates the prefix tokens
  const { signal } = options
  if (signal?.aborted) throw new AbortedError('Connecting to NATS was aborted.', signal.reason)
  const reconnectTimeWait = options.reconnectTimeWaitMs ?? 250
  const connecting = dialNats({
    servers: options.servers,
    name: options.name ?? `signalbox-${process.pid}`,
    // Never give up: the default (10 attempts) closes the connection for good after ~20 s.
    maxReconnectAttempts: -1,
    waitOnFirstConnect: true,
    reconnectTimeWait,
    reconnectJitter: Math.min(100, reconnectTimeWait),
    pingInterval: options.pingIntervalMs ?? 10_000,
    ...(options.user !== undefined ? { user: options.user } : {}),
    ...(options.pass !== undefined ? { pass: options.pass } : {}),
    ...(options.token !== undefined ? { token: options.token } : {}),
    ...natsConnectOptions(options.credentials),
  })
  let nc: NatsConnection
  try {
    nc = await untilAborted(connecting, signal, 'Connecting to NATS')
  } catch (error) {
    // With waitOnFirstConnect the attempt goes on in the background: close it if it ever lands.
    connecting.then((late) => late.close()).catch(() => {})
    if (error instanceof AbortedError) throw error
    throw (
      classifyConnectError(error, {
        servers: serverList(options.credentials?.servers ?? options.servers),
        credential: credentialOf(options),
      }) ??
      new BusError('BUS_CONNECT_FAILED', `Could not connect to NATS at ${redactUrls(String(options.servers))}.`, { cause: error })
    )
  }
  const bus = new NatsBus(nc, options, prefix)
  try {
    await untilAborted(bus.ensureStream(), signal, 'Setting up the durable stream')
  } catch (error) {
    await bus.close()
    if (error instanceof AbortedError || error instanceof BusError) throw error
    throw new BusError('BUS_DURABLE_SETUP_FAILED', `Could not create or update stream "${bus.streamName}".`, { cause: error })
  }
  return bus
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
  readonly #configuredSubjects: string[]
  #durableSubjects: string[]
  readonly #durableCache = new Map<string, boolean>()
  readonly #statusListeners = new Set<(status: BusStatus) => void>()
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
  /** Replaced at every reconnect: waiting on it lets retries resume as soon as the link is back. */
  #reconnected = deferred()
  readonly #closedSignal = deferred()

  constructor(connection: NatsConnection, options: NatsBusOptions, prefix: string) {
    this.connection = connection
    this.#options = options
    this.prefix = prefix
    this.name = options.name ?? `signalbox-${process.pid}`
    this.streamName = options.durable?.stream ?? defaultStreamName(prefix)
    this.#configuredSubjects = options.durable?.subjects ?? defaultDurableSubjects(prefix)
    for (const subject of this.#configuredSubjects) assertSubscribeSubject(subject)
    this.#durableSubjects = [...this.#configuredSubjects]
    this.#maxPayload = connection.info?.max_payload ?? 1024 * 1024
    this.#js = jetstream(connection)
    void this.#watchStatus()
    connection
      .closed()
      .then((error) => {
        this.#closed = true
        this.#closedSignal.resolve()
        if (error) this.#emit({ type: 'error', error })
        this.#emit({ type: 'closed' })
      })
      .catch(() => {})
  }

  get maxPayload(): number {
    // The server announces its limit in INFO; remember it for while we are disconnected.
    const current = this.connection.info?.max_payload
    if (current !== undefined) this.#maxPayload = current
    return this.#maxPayload
  }

  /** The subjects the stream captures (after setup: as the server reports them). */
  get durableSubjects(): readonly string[] {
    return this.#durableSubjects
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
    this.#assertNotDurable(subject)
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
    this.#assertNotDurable(subject)
    const { signal, timeoutMs } = options
    const bytes = toBytes(data)
    const headers = toNatsHeaders(options.headers)
    this.#checkSize(subject, bytes, headers)
    if (signal?.aborted) throw requestAborted(subject, signal)
    if (signal === undefined) {
      // The shared (muxed) inbox: no SUB/UNSUB per request.
      return new Promise<BusMessage>((resolve, reject) => {
        const fail = (error: Error) => reject(error)
        this.#pendingRequests.add(fail)
        this.connection
          .request(subject, bytes, { timeout: timeoutMs, ...(headers ? { headers } : {}) })
          .then(
            (reply) => resolve(new NatsMessage(reply, undefined, this.#internals)),
            (error: unknown) =>
              reject(this.#closed ? new BusClosedError('request', error) : mapNatsError(error, subject, 'request', timeoutMs)),
          )
          .finally(() => this.#pendingRequests.delete(fail))
      })
    }
    return this.#requestWithSignal(subject, bytes, headers, timeoutMs, signal)
  }

  /** A private inbox per request so that aborting can drop it at once (the muxed one cannot be cancelled). */
  #requestWithSignal(
    subject: string,
    bytes: Uint8Array,
    headers: MsgHdrs | undefined,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<BusMessage> {
    return new Promise<BusMessage>((resolve, reject) => {
      let settled = false
      let timer: ReturnType<typeof setTimeout> | undefined
      let inboxSubscription: NatsSubscription | undefined
      const fail = (error: Error) => settle(error)
      const settle = (error: Error | undefined, msg?: Msg) => {
        if (settled) return
        settled = true
        this.#pendingRequests.delete(fail)
        if (timer !== undefined) clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        inboxSubscription?.unsubscribe()
        if (error) reject(error)
        else resolve(new NatsMessage(msg as Msg, undefined, this.#internals))
      }
      const onAbort = () => settle(requestAborted(subject, signal))
      this.#pendingRequests.add(fail)
      try {
        const inbox = createInbox()
        inboxSubscription = this.connection.subscribe(inbox, {
          max: 1,
          callback: (error, msg) => {
            if (error) return settle(mapNatsError(error, subject, 'request', timeoutMs))
            // The server answers "no responders" with an empty 503 status message.
            if (msg.data.length === 0 && msg.headers?.code === 503) return settle(new BusNoRespondersError(subject))
            settle(undefined, msg)
          },
        })
        this.connection.publish(subject, bytes, { reply: inbox, ...(headers ? { headers } : {}) })
      } catch (error) {
        return settle(mapNatsError(error, subject, 'request', timeoutMs))
      }
      timer = setTimeout(() => settle(new BusTimeoutError(subject, timeoutMs)), timeoutMs)
      signal.addEventListener('abort', onAbort, { once: true })
    })
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
    this.#assertDurable(subject)
    if (typeof msgId !== 'string' || msgId.length === 0) {
      throw new InvalidSubjectError(String(msgId), 'durablePublish needs a non-empty msgId')
    }
    const bytes = toBytes(data)
    const headers = toNatsHeaders(options.headers) ?? natsHeaders()
    headers.set('Nats-Msg-Id', msgId)
    this.#checkSize(subject, bytes, headers)
    // A consumer set up on this bus before this call must see the message (its creation is async).
    if (this.#settingUp.size > 0) await Promise.allSettled(this.#settingUp)
    const attemptTimeout = this.#options.publishAttemptTimeoutMs ?? 2_000
    for (let attempt = 0; ; attempt++) {
      if (this.#closed) throw new BusClosedError('durablePublish')
      if (signal?.aborted) throw new AbortedError(`Durable publish on "${subject}" was aborted.`, signal.reason)
      const reconnected = this.#reconnected.promise
      const publishing = this.#js.publish(subject, bytes, { msgID: msgId, headers, timeout: attemptTimeout })
      publishing.catch(() => {}) // may be abandoned below
      try {
        const outcome = await raceOutcome(publishing, reconnected, this.#closedSignal.promise, signal)
        if (outcome.kind === 'done') return { seq: outcome.value.seq, duplicate: outcome.value.duplicate }
        if (outcome.kind === 'aborted') {
          throw new AbortedError(`Durable publish on "${subject}" was aborted.`, signal?.reason)
        }
      } catch (error) {
        if (error instanceof AbortedError) throw error
        if (this.#closed) throw new BusClosedError('durablePublish', error)
        if (!isRetryable(error)) throw mapDurableError(error, subject, this.maxPayload)
        // No responders on a live connection can mean the stream is gone: recreate it.
        if (attempt >= 2 && isNoResponders(error)) void this.ensureStream().catch(() => {})
        await this.#pause(backoff(attempt), signal)
      }
    }
  }

  durableConsume(subject: string, handler: DurableHandler, options: DurableConsumeOptions = {}): Subscription {
    this.#assertOpen('durableConsume')
    assertSubscribeSubject(subject)
    this.#assertDurable(subject)
    if (options.durableName !== undefined) assertToken(options.durableName)
    const consumer = new NatsDurableConsumer(this.#internals, subject, handler, options, {
      pullBatch: this.#options.pullBatch ?? 16,
      pullExpiresMs: this.#options.pullExpiresMs ?? 10_000,
      ephemeralInactiveMs: this.#options.ephemeralInactiveMs ?? 120_000,
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
      if (error instanceof AbortedError) throw error
      throw mapNatsError(error, '', 'flush')
    }
  }

  onStatus(listener: (status: BusStatus) => void): () => void {
    this.#statusListeners.add(listener)
    return () => this.#statusListeners.delete(listener)
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
      this.#closedSignal.resolve()
    })()
    return this.#closing
  }

  // ---- stream setup ----

  /** Creates the stream, or adds our subjects and limits to an existing one (other subjects are kept). */
  ensureStream(): Promise<void> {
    if (this.#ensuring) return this.#ensuring
    this.#ensuring = this.#doEnsureStream().finally(() => {
      this.#ensuring = undefined
    })
    return this.#ensuring
  }

  async #doEnsureStream(): Promise<void> {
    const jsm = await this.#manager()
    const durable = this.#options.durable ?? {}
    const duplicateWindow = nanos(durable.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS)
    const maxAge = durable.maxAgeMs === undefined ? 0 : nanos(durable.maxAgeMs)
    let info: StreamInfo
    try {
      info = await jsm.streams.info(this.streamName)
    } catch (error) {
      if (!isApiError(error, JetStreamApiCodes.StreamNotFound)) throw error
      const created = await jsm.streams.add({
        name: this.streamName,
        subjects: this.#configuredSubjects,
        storage: durable.storage === 'memory' ? StorageType.Memory : StorageType.File,
        retention: RetentionPolicy.Limits,
        discard: DiscardPolicy.Old,
        duplicate_window: duplicateWindow,
        max_age: maxAge,
        num_replicas: 1,
      })
      this.#setDurableSubjects(created.config.subjects ?? this.#configuredSubjects)
      return
    }
    const existing = info.config.subjects ?? []
    const missing = this.#configuredSubjects.filter((subject) => !existing.some((p) => subjectCovers(p, subject)))
    if (missing.length > 0 || info.config.duplicate_window !== duplicateWindow || info.config.max_age !== maxAge) {
      const updated = await jsm.streams.update(this.streamName, {
        subjects: [...existing, ...missing],
        duplicate_window: duplicateWindow,
        max_age: maxAge,
      })
      this.#setDurableSubjects(updated.config.subjects ?? [...existing, ...missing])
    } else {
      this.#setDurableSubjects(existing)
    }
  }

  #setDurableSubjects(subjects: string[]): void {
    this.#durableSubjects = subjects
    this.#durableCache.clear()
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
    emitError: (error) => this.#emit({ type: 'error', error }),
    forget: (consumer) => this.#consumers.delete(consumer),
    pause: (ms) => this.#pause(ms, undefined).catch(() => {}),
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

  /**
   * Acknowledges so that the ack survives a reconnect: ack-ack (the server confirms), retried
   * until confirmed or the ack wait has passed (then the message is redelivered anyway).
   */
  #ack(msg: JsMsg, ackWaitMs: number): void {
    const reply = (msg as unknown as { reply?: unknown }).reply
    if (typeof reply !== 'string' || reply.length === 0) {
      msg.ack()
      return
    }
    const task = (async () => {
      const deadline = Date.now() + Math.max(ackWaitMs, 5_000)
      for (let attempt = 0; !this.#closed || this.#closing !== undefined; attempt++) {
        if (this.connection.isClosed()) return
        const reconnected = this.#reconnected.promise
        const acking = this.connection.request(reply, ACK, { timeout: Math.min(2_000, Math.max(ackWaitMs, 500)) })
        acking.catch(() => {})
        try {
          const outcome = await raceOutcome(acking, reconnected, this.#closedSignal.promise, undefined)
          if (outcome.kind === 'done') return
        } catch {
          // lost with the connection, or timed out: try again below
        }
        if (Date.now() >= deadline) return
        await this.#pause(backoff(attempt), undefined).catch(() => {})
      }
    })()
    this.#ackTasks.add(task)
    void task.finally(() => this.#ackTasks.delete(task))
  }

  /** Waits `ms`, or less if the connection comes back or the bus closes. */
  #pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }
      const onAbort = () => {
        clearTimeout(timer)
        reject(new AbortedError('The operation was aborted.', signal?.reason))
      }
      const timer = setTimeout(finish, ms)
      void this.#reconnected.promise.then(finish)
      void this.#closedSignal.promise.then(finish)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  async #watchStatus(): Promise<void> {
    for await (const status of this.connection.status()) {
      switch (status.type) {
        case 'disconnect':
          this.#emit({ type: 'disconnect', server: status.server })
          break
        case 'reconnecting':
          this.#emit({ type: 'reconnecting' })
          break
        case 'reconnect': {
          const previous = this.#reconnected
          this.#reconnected = deferred()
          previous.resolve()
          // The server may have restarted: check the stream, and re-establish every consumer
          // (their pull requests died with the old connection; an ephemeral one may be gone).
          void this.ensureStream().catch((error) => this.#emit({ type: 'error', error: toError(error) }))
          for (const consumer of this.#consumers) consumer.restart()
          this.#emit({ type: 'reconnect', server: status.server })
          break
        }
        case 'error':
          this.#emit({ type: 'error', error: status.error })
          break
        default:
        // ping, update, ldm, slow consumer...: not part of BusStatus.
      }
    }
  }

  #emit(status: BusStatus): void {
    for (const listener of this.#statusListeners) {
      try {
        listener(status)
      } catch {
        // A listener must not break the status loop.
      }
    }
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
    return this.#isDurable(msg.subject) ? undefined : msg.reply
  }

  #isDurable(subject: string): boolean {
    let durable = this.#durableCache.get(subject)
    if (durable === undefined) {
      durable = this.#durableSubjects.some((pattern) => subjectMatches(pattern, subject))
      // Bounded: subjects repeat, but ids in them make the set open-ended.
      if (this.#durableCache.size > 2_000) this.#durableCache.clear()
      this.#durableCache.set(subject, durable)
    }
    return durable
  }

  #assertOpen(operation: string): void {
    if (this.#closed) throw new BusClosedError(operation)
  }

  #assertDurable(subject: string): void {
    if (!this.#durableSubjects.some((pattern) => subjectCovers(pattern, subject))) {
      throw new DurableSubjectError(subject, this.#durableSubjects)
    }
  }

  #assertNotDurable(subject: string): void {
    if (this.#isDurable(subject)) throw new InvalidSubjectError(subject, DURABLE_ONLY_REASON)
  }

  #checkSize(subject: string, bytes: Uint8Array, headers: MsgHdrs | undefined): void {
    // Checked here so the caller gets our error (the client would throw InvalidArgumentError).
    const size = bytes.length + (headers ? headerSize(headers) : 0)
    const max = this.maxPayload
    if (size > max) throw new BusPayloadTooLargeError(subject, size, max)
  }
}

/** The part of the bus its messages and consumers use (not public API). */
interface BusInternals {
  connection(): NatsConnection
  streamName(): string
  js(): JetStreamClient
  manager(): Promise<JetStreamManager>
  /** Publishes a reply after the size check. */
  respond(subject: string, data: Uint8Array | string, headers: BusHeaders | undefined): void
  ack(msg: JsMsg, ackWaitMs: number): void
  report(error: unknown, subject: string, subscription: string, durable: boolean): void
  emitError(error: Error): void
  forget(consumer: NatsDurableConsumer): void
  pause(ms: number): Promise<void>
}

class NatsPlainSubscription implements Subscription {
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

class NatsMessage implements BusMessage {
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

class NatsDurableMessage extends NatsMessage implements DurableMessage {
  readonly seq: number
  readonly #consumer: NatsDurableConsumer
  readonly #jsMsg: JsMsg
  #settled = false

  constructor(msg: JsMsg, consumer: NatsDurableConsumer, bus: BusInternals) {
    super(msg, undefined, bus)
    this.#jsMsg = msg
    this.#consumer = consumer
    this.seq = msg.info.streamSequence
  }

  ack(): void {
    if (this.#settled) return
    this.#settled = true
    this.#consumer.acked(this.#jsMsg)
  }

  nak(delayMs?: number): void {
    if (this.#settled) return
    this.#settled = true
    // Fire and forget: if the nak is lost, the ack wait redelivers the message anyway.
    this.#jsMsg.nak(delayMs !== undefined && delayMs > 0 ? delayMs : undefined)
  }

  working(): void {
    if (!this.#settled) this.#jsMsg.working()
  }
}

interface ConsumerTuning {
  pullBatch: number
  pullExpiresMs: number
  ephemeralInactiveMs: number
}

/**
 * One `durableConsume`: a JetStream pull consumer (durable when named, else ephemeral) consumed
 * with `consume()`, handled one message at a time. Every reconnect, and every "consumer not found"
 * or "consumer deleted" notice, ends the current `consume()` and the loop sets it up again;
 * a lost ephemeral consumer is recreated at the first message it had not yet acknowledged.
 */
class NatsDurableConsumer implements Subscription {
  closed = false
  readonly subject: string
  readonly queue: string | undefined = undefined
  readonly #bus: BusInternals
  readonly #handler: DurableHandler
  readonly #durableName: string | undefined
  readonly #consumerName: string
  readonly #ackWaitMs: number
  readonly #deliverAll: boolean
  readonly #tuning: ConsumerTuning
  readonly #signal: AbortSignal | undefined
  readonly #onAbort = () => this.unsubscribe()
  #messages: ConsumerMessages | undefined
  #created = false
  /** For recreating a lost ephemeral consumer: where to start again. */
  #startSeq = 0
  #highestSeen = 0
  readonly #unacked = new Set<number>()
  /**
   * Stream sequences this consumer acknowledged (bounded). nats-server 2.9 confirms an ack before
   * it is on disk: a restart right after can forget it and deliver the message again. Seen here,
   * such a redelivery is acknowledged again instead of handled twice.
   */
  readonly #acked = new Set<number>()
  #restartNow = false
  readonly #ready = deferred()
  readonly #failed = deferred()
  /** Resolves once the consumer exists and is being consumed; rejects if it cannot be set up (a conflict). */
  readonly ready: Promise<void>

  constructor(
    bus: BusInternals,
    subject: string,
    handler: DurableHandler,
    options: DurableConsumeOptions,
    tuning: ConsumerTuning,
  ) {
    this.#bus = bus
    this.subject = subject
    this.#handler = handler
    this.#durableName = options.durableName
    this.#consumerName = options.durableName ?? `sbx_${randomBytes(8).toString('hex')}`
    this.#ackWaitMs = options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS
    this.#deliverAll = options.deliverAll ?? false
    this.#tuning = tuning
    this.#signal = options.signal
    this.ready = new Promise<void>((resolve, reject) => {
      void this.#ready.promise.then(resolve)
      void this.#failed.promise.then(() => reject(this.#failure))
    })
    this.ready.catch(() => {}) // nobody has to await it
  }

  #failure: Error | undefined

  /** Starts the loop. */
  start(): void {
    this.#signal?.addEventListener('abort', this.#onAbort, { once: true })
    void this.#run()
  }

  unsubscribe(): void {
    void this.shutdown()
  }

  /** Stops consuming; a private consumer is also deleted on the server (a durable one stays). */
  async shutdown(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.#signal?.removeEventListener('abort', this.#onAbort)
    this.#messages?.stop()
    this.#ready.resolve()
    this.#bus.forget(this)
    if (this.#durableName === undefined && this.#created && !this.#bus.connection().isClosed()) {
      try {
        const jsm = await this.#bus.manager()
        await withTimeout(jsm.consumers.delete(this.#bus.streamName(), this.#consumerName), 2_000)
      } catch {
        // Best effort: the server deletes it after `inactive_threshold` anyway.
      }
    }
  }

  /** Called by the bus after a reconnect. */
  restart(): void {
    if (this.closed) return
    this.#restartNow = true
    this.#messages?.stop()
  }

  acked(msg: JsMsg): void {
    const seq = msg.info.streamSequence
    this.#unacked.delete(seq)
    this.#acked.add(seq)
    if (this.#acked.size > 10_000) this.#acked.delete(this.#acked.values().next().value as number)
    this.#bus.ack(msg, this.#ackWaitMs)
  }

  async #run(): Promise<void> {
    let failures = 0
    while (!this.closed) {
      try {
        const consumer = await this.#ensureConsumer()
        if (this.closed) break
        const messages = await consumer.consume({ max_messages: this.#tuning.pullBatch, expires: this.#tuning.pullExpiresMs })
        this.#messages = messages
        if (this.closed) {
          messages.stop()
          break
        }
        this.#ready.resolve()
        failures = 0
        void this.#watch(messages)
        for await (const msg of messages) {
          if (this.closed) break
          await this.#handle(msg)
        }
      } catch (error) {
        if (this.closed) break
        if (error instanceof DurableConsumerConflictError) {
          // Cannot succeed by retrying: end the subscription and say why.
          this.#failure = error
          this.#failed.resolve()
          this.#bus.emitError(error)
          await this.shutdown()
          break
        }
        failures++
        if (!this.#bus.connection().isClosed()) {
          this.#bus.emitError(
            new BusError('BUS_CONSUMER_FAILED', `Durable consumer on "${this.subject}" failed; retrying.`, { cause: error }),
          )
        }
      }
      if (this.closed || this.#bus.connection().isClosed()) break
      if (this.#restartNow) {
        this.#restartNow = false
        continue
      }
      await this.#bus.pause(backoff(failures))
    }
    this.#ready.resolve()
  }

  async #watch(messages: ConsumerMessages): Promise<void> {
    try {
      for await (const notice of messages.status()) {
        if (notice.type === 'consumer_not_found' || notice.type === 'consumer_deleted' || notice.type === 'stream_not_found') {
          // The library would only poll for it to come back; we recreate it instead.
          this.#restartNow = true
          messages.stop()
          return
        }
      }
    } catch {
      // the iterator ended with the consume
    }
  }

  async #handle(msg: JsMsg): Promise<void> {
    const seq = msg.info.streamSequence
    if (this.#acked.has(seq)) {
      this.#bus.ack(msg, this.#ackWaitMs)
      return
    }
    this.#unacked.add(seq)
    if (seq > this.#highestSeen) this.#highestSeen = seq
    const message = new NatsDurableMessage(msg, this, this.#bus)
    try {
      await this.#handler(message)
    } catch (error) {
      // Not acknowledged, so the server redelivers it after the ack wait.
      this.#bus.report(error, msg.subject, this.subject, true)
    }
  }

  async #ensureConsumer() {
    const jsm = await this.#bus.manager()
    const stream = this.#bus.streamName()
    if (this.#durableName !== undefined || this.#created) {
      try {
        const info = await jsm.consumers.info(stream, this.#consumerName)
        const filter = info.config.filter_subject ?? '>'
        // nats-server 2.9 silently rewrites a durable's filter on "create": refuse instead.
        if (filter !== this.subject) throw new DurableConsumerConflictError(this.#consumerName, filter, this.subject)
        return this.#bus.js().consumers.get(stream, this.#consumerName)
      } catch (error) {
        if (!isApiError(error, JetStreamApiCodes.ConsumerNotFound)) throw error
      }
    }
    const info = await jsm.consumers.add(stream, this.#config())
    if (!this.#created) {
      this.#created = true
      this.#startSeq = this.#deliverAll ? 1 : info.delivered.stream_seq + 1
    }
    return this.#bus.js().consumers.get(stream, this.#consumerName)
  }

  #config(): Partial<ConsumerConfig> {
    const base: Partial<ConsumerConfig> = {
      ack_policy: AckPolicy.Explicit,
      filter_subject: this.subject,
      ack_wait: nanos(this.#ackWaitMs),
      max_deliver: -1,
      replay_policy: ReplayPolicy.Instant,
    }
    if (this.#durableName !== undefined) {
      return {
        ...base,
        durable_name: this.#durableName,
        deliver_policy: this.#deliverAll ? DeliverPolicy.All : DeliverPolicy.New,
      }
    }
    const ephemeral = { ...base, name: this.#consumerName, inactive_threshold: nanos(this.#tuning.ephemeralInactiveMs) }
    if (!this.#created) return { ...ephemeral, deliver_policy: this.#deliverAll ? DeliverPolicy.All : DeliverPolicy.New }
    // Recreating a private consumer the server lost: resume at the oldest unacknowledged message.
    let resume = this.#highestSeen > 0 ? this.#highestSeen + 1 : this.#startSeq
    for (const seq of this.#unacked) if (seq < resume) resume = seq
    return { ...ephemeral, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Math.max(1, resume) }
  }
}

// ---- helpers ----

function toBytes(data: Uint8Array | string): Uint8Array {
  return typeof data === 'string' ? encoder.encode(data) : data
}

function toNatsHeaders(headers: BusHeaders | undefined): MsgHdrs | undefined {
  if (headers === undefined) return undefined
  const h = natsHeaders()
  for (const [key, value] of Object.entries(headers)) h.set(key, value)
  return h
}

function fromNatsHeaders(headers: MsgHdrs | undefined): BusHeaders | undefined {
  if (headers === undefined) return undefined
  const out: Record<string, string> = {}
  for (const [key, values] of headers) out[key] = values[values.length - 1] ?? ''
  return Object.freeze(out)
}

/** Size of the encoded header block (`NATS/1.0\r\n` + `key: value\r\n`... + `\r\n`), without encoding it. */
function headerSize(headers: MsgHdrs): number {
  let size = 12
  for (const [key, values] of headers) {
    for (const value of values) size += Buffer.byteLength(key) + Buffer.byteLength(value) + 4
  }
  return size
}

function requestAborted(subject: string, signal: AbortSignal): AbortedError {
  return new AbortedError(`Request on "${subject}" was aborted.`, signal.reason)
}

function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code
}

function isNoResponders(error: unknown): boolean {
  if (error instanceof natsErrors.RequestError) return error.isNoResponders()
  return error instanceof Error && (error.name === 'JetStreamNotEnabled' || error instanceof natsErrors.NoRespondersError)
}

/** Failures of one durable publish attempt that a later attempt can fix (server restarting, link down). */
function isRetryable(error: unknown): boolean {
  if (error instanceof natsErrors.TimeoutError) return true
  if (error instanceof natsErrors.RequestError) return true
  if (error instanceof natsErrors.ConnectionError) return true
  if (error instanceof natsErrors.NoRespondersError) return true
  if (error instanceof Error && error.name === 'JetStreamNotEnabled') return true
  // "JetStream system temporarily unavailable" and friends.
  if (error instanceof JetStreamApiError) return error.status === 503
  return false
}

function mapDurableError(error: unknown, subject: string, maxPayload: number): Error {
  if (error instanceof natsErrors.InvalidArgumentError && /max_payload/.test(error.message)) {
    return new BusPayloadTooLargeError(subject, Number.NaN, maxPayload)
  }
  if (error instanceof JetStreamApiError) {
    return new BusError('BUS_DURABLE_REJECTED', `The stream refused the message on "${subject}": ${error.message}`, {
      cause: error,
      details: { subject, apiCode: error.code },
    })
  }
  return mapNatsError(error, subject, 'durablePublish')
}

/** Normalizes a nats.js error once, at the boundary, into a bus error. */
function mapNatsError(error: unknown, subject: string, operation: string, timeoutMs?: number): Error {
  if (error instanceof BusError || error instanceof AbortedError) return error
  if (error instanceof natsErrors.TimeoutError) return new BusTimeoutError(subject, timeoutMs ?? Number.NaN, error)
  if (error instanceof natsErrors.NoRespondersError) return new BusNoRespondersError(subject, error)
  if (error instanceof natsErrors.RequestError) {
    if (error.isNoResponders()) return new BusNoRespondersError(subject, error)
    if (error.cause instanceof natsErrors.TimeoutError) return new BusTimeoutError(subject, timeoutMs ?? Number.NaN, error)
  }
  if (error instanceof natsErrors.ClosedConnectionError || error instanceof natsErrors.DrainingConnectionError) {
    return new BusClosedError(operation, error)
  }
  if (error instanceof natsErrors.InvalidSubjectError) return new InvalidSubjectError(subject, 'rejected by the NATS client')
  return new BusError('BUS_ERROR', `NATS ${operation} on "${subject}" failed: ${toError(error).message}`, { cause: error })
}

function toError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error))
}

/** 100 ms doubling to 2 s, with jitter so many clients do not retry in step. */
function backoff(attempt: number): number {
  const base = Math.min(2_000, 100 * 2 ** Math.min(attempt, 5))
  return Math.round(base / 2 + Math.random() * (base / 2))
}

interface Deferred {
  promise: Promise<void>
  resolve(): void
}

function deferred(): Deferred {
  let resolve!: () => void
  const promise = new Promise<void>((r) => {
    resolve = r
  })
  return { promise, resolve }
}

type Outcome<T> = { kind: 'done'; value: T } | { kind: 'reconnected' } | { kind: 'aborted' }

/** Waits for `work`, but gives up early (without cancelling it) on reconnect, close or abort. */
function raceOutcome<T>(
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
      (error: unknown) => finish(toError(error)),
    )
    void reconnected.then(() => finish({ kind: 'reconnected' }))
    void closed.then(() => finish(new BusClosedError('wait for the server')))
    if (signal?.aborted) onAbort()
    else signal?.addEventListener('abort', onAbort, { once: true })
  })
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
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
