/**
 * One `durableConsume` on NATS (like nats.js's `consumer.ts`): a JetStream pull consumer, durable
 * when named, else ephemeral, re-established after reconnects and recreated if the server lost it.
 */
import { randomBytes } from 'node:crypto'
import {
  AckPolicy,
  type ConsumerConfig,
  type ConsumerMessages,
  DeliverPolicy,
  JetStreamApiCodes,
  type JsMsg,
  ReplayPolicy,
} from '@nats-io/jetstream'
import { nanos } from '@nats-io/transport-node'
import {
  BusError,
  type DurableConsumeOptions,
  DurableConsumerConflictError,
  type DurableHandler,
  type Subscription,
} from '@signalbox/core/bus'
import { DEFAULT_ACK_WAIT_MS } from '@signalbox/core/internal'
import { backoff, deferred, withTimeout } from './async.ts'
import { isApiError, isPermissionViolation } from './errors.ts'
import { HeldMessages } from './held-messages.ts'
import type { BusInternals } from './internals.ts'
import { NatsDurableMessage } from './messages.ts'

export interface ConsumerTuning {
  pullBatch: number
  pullExpiresMs: number
  /** Idle heartbeat of a pull request (see `NatsBusOptions.pullHeartbeatMs`). */
  pullHeartbeatMs: number
  ephemeralInactiveMs: number
  /** The consumer's `ack_wait` on the server when the caller's `ackWaitMs` is longer. */
  serverAckWaitMs: number
  /**
   * Copies of each consumer's state (the stream's replicas). A private consumer is otherwise
   * kept by one node only, and the loss of that node loses what it had delivered.
   */
  replicas: number
  /** Private consumers are named `<consumerPrefix>_<purpose>` (least privilege pins the names). */
  consumerPrefix?: string | undefined
}

/**
 * One `durableConsume`: a JetStream pull consumer (durable when named, else ephemeral) consumed
 * with `consume()`, handled one message at a time. What comes in is held (`held-messages.ts`):
 * kept alive with in-progress acks under a short server `ack_wait`, and nak'd on shutdown.
 * Every reconnect, and every "consumer not found" or "consumer deleted" notice, ends the current
 * `consume()` and the loop sets it up again; a lost ephemeral consumer is recreated at the first
 * message it had not yet acknowledged.
 */
export class NatsDurableConsumer implements Subscription {
  closed = false
  readonly subject: string
  readonly queue: string | undefined = undefined
  readonly #bus: BusInternals
  readonly #handler: DurableHandler
  readonly #durableName: string | undefined
  readonly #consumerName: string
  /** A private consumer with a name derived from its purpose (not random): a previous run's may still exist. */
  readonly #fixedName: boolean
  readonly #ackWaitMs: number
  readonly #serverAckWaitMs: number
  readonly #held: HeldMessages
  /** Received and not yet handed to the handler; one worker handles them in order. */
  readonly #queue: JsMsg[] = []
  #worker: Promise<void> | undefined
  readonly #deliverAll: boolean
  /** `startSeq` of the options: where a private consumer starts (else all or new). */
  readonly #firstSeq: number | undefined
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
  readonly #caughtUp = deferred()
  /** Nothing was waiting for this consumer when it was made: caught up once it is consumed. */
  #emptyAtStart = false
  /** Resolves once every message the stream held for this consumer when it was made was handled. */
  readonly caughtUp: Promise<void> = this.#caughtUp.promise

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
    this.#fixedName = options.durableName === undefined && tuning.consumerPrefix !== undefined
    this.#consumerName =
      options.durableName ??
      (tuning.consumerPrefix !== undefined
        ? `${tuning.consumerPrefix}_${options.purpose ?? 'private'}`
        : `sbx_${randomBytes(8).toString('hex')}`)
    this.#ackWaitMs = options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS
    this.#serverAckWaitMs = Math.min(this.#ackWaitMs, tuning.serverAckWaitMs)
    this.#held = new HeldMessages(this.#ackWaitMs, this.#serverAckWaitMs, () => bus.connection().isClosed())
    this.#deliverAll = options.deliverAll ?? false
    this.#firstSeq = options.startSeq === undefined ? undefined : Math.max(1, Math.floor(options.startSeq))
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

  /**
   * Stops consuming and hands back (nak) what it held, so another member gets it at once; a
   * message a handler is busy with follows when the handler returns without settling it. A
   * private consumer is also deleted on the server (a durable one stays).
   */
  async shutdown(): Promise<void> {
    if (this.closed) return
    this.closed = true
    this.#signal?.removeEventListener('abort', this.#onAbort)
    this.#held.releaseAll()
    this.#messages?.stop()
    this.#ready.resolve()
    this.#caughtUp.resolve()
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
    this.#held.settle(msg)
    const seq = msg.info.streamSequence
    this.#unacked.delete(seq)
    this.#acked.add(seq)
    if (this.#acked.size > 10_000) this.#acked.delete(this.#acked.values().next().value as number)
    this.#bus.ack(msg, this.#ackWaitMs)
  }

  naked(msg: JsMsg): void {
    this.#held.settle(msg)
  }

  working(msg: JsMsg): void {
    this.#held.extend(msg)
  }

  async #run(): Promise<void> {
    let failures = 0
    while (!this.closed) {
      try {
        const consumer = await this.#ensureConsumer()
        if (this.closed) break
        const { pullBatch, pullExpiresMs, pullHeartbeatMs } = this.#tuning
        const messages = await consumer.consume({
          max_messages: pullBatch,
          expires: pullExpiresMs,
          // The client's default (half of `expires`) leaves a pull lost with its consumer's leader
          // unnoticed for two of them: 10 s without messages after a leader loss.
          idle_heartbeat: Math.min(pullHeartbeatMs, pullExpiresMs / 2),
        })
        this.#messages = messages
        if (this.closed) {
          messages.stop()
          break
        }
        this.#ready.resolve()
        if (this.#emptyAtStart) this.#caughtUp.resolve()
        failures = 0
        void this.#watch(messages)
        // Taken off the client's buffer at once, so everything received is held (kept alive).
        for await (const msg of messages) this.#receive(msg)
      } catch (error) {
        if (this.closed) break
        const refused = isPermissionViolation(error)
          ? new BusError(
              'BUS_PERMISSION_DENIED',
              `This user may not set up the consumer "${this.#consumerName}" on "${this.subject}" (permissions violation): its permissions were generated for other consumers (signalbox nats permissions: --name, --group, --agent).`,
              { cause: error, details: { consumer: this.#consumerName, subject: this.subject } },
            )
          : undefined
        if (DurableConsumerConflictError.is(error) || refused) {
          // Cannot succeed by retrying: end the subscription and say why.
          const failure = refused ?? (error as Error)
          this.#failure = failure
          this.#failed.resolve()
          this.#bus.emitError(failure)
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
      // Handle what came in before setting up again (in order, and so a lost ephemeral consumer resumes right).
      if (this.#worker !== undefined) await this.#worker
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
        if (notice.type === 'heartbeats_missed') {
          // The pull was lost (its consumer's leader died or the server forgot it). The library
          // would ask for the consumer's info and, if that fails (no leader yet), sleep 5 to 15 s
          // (its backoff is the pull's `expires`, jittered) before it pulls again: a consumer deaf
          // for that long after the election. Set up again here, at this bus's backoff (≤ 2 s).
          this.#restartNow = true
          messages.stop()
          return
        }
      }
    } catch {
      // the iterator ended with the consume
    }
  }

  /** After shutdown, `hold` hands it straight back (nak). */
  #receive(msg: JsMsg): void {
    this.#held.hold(msg)
    if (this.closed) return
    this.#queue.push(msg)
    if (this.#worker === undefined) this.#worker = this.#work()
  }

  async #work(): Promise<void> {
    while (this.#queue.length > 0) {
      const msg = this.#queue.shift() as JsMsg
      // Shut down: the rest was handed back by `releaseAll`.
      if (!this.closed) await this.#handle(msg)
    }
    this.#worker = undefined
  }

  async #handle(msg: JsMsg): Promise<void> {
    const seq = msg.info.streamSequence
    if (this.#acked.has(seq)) {
      this.#held.settle(msg)
      this.#bus.ack(msg, this.#ackWaitMs)
      return
    }
    this.#unacked.add(seq)
    if (seq > this.#highestSeen) this.#highestSeen = seq
    const message = new NatsDurableMessage(msg, this, this.#bus)
    this.#held.handOut(msg, () => message.nak())
    try {
      await this.#handler(message)
    } catch (error) {
      // Not acknowledged, so the server redelivers it after the ack wait.
      this.#bus.report(error, msg.subject, this.subject, true)
    } finally {
      this.#held.handled(msg)
      // Handled in order: the one after which nothing was pending means every earlier one is handled too.
      if (msg.info.pending === 0) this.#caughtUp.resolve()
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
        await this.#adoptAckWait(info.config.ack_wait)
        if (info.num_pending === 0) this.#emptyAtStart = true
        return this.#bus.js().consumers.get(stream, this.#consumerName)
      } catch (error) {
        if (!isApiError(error, JetStreamApiCodes.ConsumerNotFound)) throw error
      }
    }
    if (this.#fixedName && !this.#created) {
      // A previous process's consumer of this name (not yet expired) has another start: ours replaces it.
      await jsm.consumers.delete(stream, this.#consumerName).catch(() => false)
    }
    const info = await jsm.consumers.add(stream, this.#config())
    if (!this.#created) {
      this.#created = true
      if (info.num_pending === 0) this.#emptyAtStart = true
      this.#startSeq = this.#firstSeq ?? (this.#deliverAll ? 1 : info.delivered.stream_seq + 1)
    }
    return this.#bus.js().consumers.get(stream, this.#consumerName)
  }

  /**
   * An existing consumer keeps the `ack_wait` it was made with (joining does not change it, as
   * before), except one longer than the bus's `serverAckWaitMs` (made with the old 30 s): that
   * one is shortened, so a dead holder's messages come back quickly. Heartbeats follow the result.
   */
  async #adoptAckWait(ackWaitNanos: number | undefined): Promise<void> {
    let serverMs = ackWaitNanos === undefined ? this.#serverAckWaitMs : Math.floor(ackWaitNanos / 1_000_000)
    if (serverMs > this.#tuning.serverAckWaitMs) {
      try {
        const jsm = await this.#bus.manager()
        const ackWait = nanos(this.#tuning.serverAckWaitMs)
        await jsm.consumers.update(this.#bus.streamName(), this.#consumerName, { ack_wait: ackWait })
        serverMs = this.#tuning.serverAckWaitMs
      } catch {
        // Best effort: it still works, only a dead holder's messages come back later.
      }
    }
    this.#held.useServerAckWait(serverMs)
  }

  #config(): Partial<ConsumerConfig> {
    const base: Partial<ConsumerConfig> = {
      ack_policy: AckPolicy.Explicit,
      filter_subject: this.subject,
      ack_wait: nanos(this.#serverAckWaitMs),
      max_deliver: -1,
      replay_policy: ReplayPolicy.Instant,
      ...(this.#tuning.replicas > 1 ? { num_replicas: this.#tuning.replicas } : {}),
    }
    if (this.#durableName !== undefined) {
      return {
        ...base,
        durable_name: this.#durableName,
        deliver_policy: this.#deliverAll ? DeliverPolicy.All : DeliverPolicy.New,
      }
    }
    const ephemeral = { ...base, name: this.#consumerName, inactive_threshold: nanos(this.#tuning.ephemeralInactiveMs) }
    if (!this.#created && this.#firstSeq !== undefined) {
      return { ...ephemeral, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: this.#firstSeq }
    }
    if (!this.#created) return { ...ephemeral, deliver_policy: this.#deliverAll ? DeliverPolicy.All : DeliverPolicy.New }
    // Recreating a private consumer the server lost: resume at the oldest unacknowledged message.
    let resume = this.#highestSeen > 0 ? this.#highestSeen + 1 : this.#startSeq
    for (const seq of this.#unacked) if (seq < resume) resume = seq
    return { ...ephemeral, deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: Math.max(1, resume) }
  }
}
