import { type Clock, type SignalboxError, systemClock } from '@signalbox/core'
import type { Bus, DurableMessage, Subscription } from '@signalbox/core/bus'
import { untilAborted } from '@signalbox/core/internal'
import { decodeMessage } from '@signalbox/core/protocol'
import type { z } from 'zod/v4'
import type { RejectionReporter } from './rejections.ts'
import { RequestWithdrawnError, type WithdrawalReason } from './withdrawal.ts'

export type ServiceMode = 'shared' | 'broadcast'

/** Where answers to the requests are published, so a request settled by anyone is dropped here. */
export interface Settlements<R extends z.ZodType> {
  subject: string
  schema: R
  idOf(reply: z.output<R>): string
  /**
   * Whether `reply` really settles `request` (e.g. a decision quoting its call id and digest).
   * A reply that does not match (forged, for another call) must not silence review. Default: yes.
   */
  matches?(request: unknown, reply: z.output<R>): boolean
  /**
   * Whether `reply` may settle anything at all, judged without the request (its signature and
   * signer, under a trust policy). One that fails is ignored: not kept, not reported through
   * `onSettled`, so a forged reply can neither be shown as a settlement nor displace a real one.
   * Default: every reply.
   */
  trusted?(reply: z.output<R>): boolean
  /** A reply that settles a request: the one in flight here (when it matches it), or one this instance does not hold. */
  onSettled?(id: string, reply: z.output<R>): void
  /** The watcher consumer's purpose (`decided`, `answered`): its name under least privilege. */
  purpose?: string
  /** Why a request in flight here stops (the decider's signal aborts with it). Default `settled-elsewhere`. */
  withdrawal?: WithdrawalReason
}

export interface RequestServiceOptions<
  S extends z.ZodType,
  R extends z.ZodType = z.ZodType,
  Reply = unknown,
  W extends z.ZodType = z.ZodType,
> {
  bus: Bus
  /** Subject (pattern) the requests arrive on. */
  subject: string
  schema: S
  idOf(request: z.output<S>): string
  deadlineOf(request: z.output<S>): number
  /**
   * `shared`: instances with the same `group` split the requests (each is handled once; if an
   * instance dies mid-way, another gets it). `broadcast`: every instance sees every request
   * (a room of people; the agent applies the first valid answer).
   */
  mode: ServiceMode
  group: string
  /**
   * Asks whoever decides (a person, a policy) for the reply. Its signal aborts at the deadline,
   * at a stop, and when the request is settled elsewhere, with a `RequestWithdrawnError` naming which.
   */
  decide(request: z.output<S>, signal: AbortSignal): Promise<Reply>
  /**
   * Stores the reply. Its signal aborts only at the deadline or a stop: once decided, the reply's
   * own echo on the settlement subject (which may arrive before the publish is acknowledged) must
   * not abandon it.
   */
  publish(request: z.output<S>, reply: Reply, signal: AbortSignal): Promise<void>
  settlements?: Settlements<R>
  /** Where the askers withdraw their requests (read like the settlements; a withdrawn request is dropped here). */
  withdrawals?: Settlements<W>
  /** Broadcast mode's private consumer purpose (`approvals`, `questions`). */
  privatePurpose?: string
  report: RejectionReporter
  clock?: Clock
  onError?(error: unknown, request: z.output<S>): void
}

export interface RequestService {
  readonly ready: Promise<void>
  /** Requests being handled now, by id. */
  readonly inFlight: ReadonlySet<string>
  /** Someone else settled this request: skip it, and stop handling it if in flight. */
  settled(id: string): void
  close(): void
}

const ACK_WAIT_MS = 30_000
/** The settlement watcher has caught up with the log once it has been quiet this long. */
const CATCH_UP_IDLE_MS = 150
/** Largest delay `setTimeout` honours (a longer one fires at once). */
export const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Serves requests that arrive on the durable path (approvals, questions): decodes them, skips
 * expired and already-handled ones, keeps the message alive while a person decides, and only
 * acknowledges once the reply is stored, so a crash mid-decision hands the request to another
 * instance instead of losing it.
 */
export function serveDurableRequests<S extends z.ZodType, R extends z.ZodType, Reply, W extends z.ZodType = z.ZodType>(
  options: RequestServiceOptions<S, R, Reply, W>,
): RequestService {
  const { bus } = options
  const clock = options.clock ?? systemClock
  const inFlight = new Map<string, { controller: AbortController; request: z.output<S> }>()
  /**
   * Decided, its reply being stored. Storing can take seconds (a stream leader's election) and the
   * request can come again meanwhile (a redelivery, or a host that took the run over showing it
   * again): without this, it would be asked a second time and answered twice.
   */
  const storing = new Set<string>()
  /**
   * Copies of a request that came while it was in flight or being stored. Each is settled as the
   * first copy is, not acknowledged at once: a copy may be the very message redelivered (its
   * in-progress acks lost in an election), and acknowledging it would turn a failed store's nak
   * into nothing, losing the request.
   */
  const followers = new Map<string, DurableMessage[]>()
  const handled = new Set<string>()
  const stop = new AbortController()
  /**
   * Every request in flight's lifetime, aborted by `close()`. Not a listener per request on
   * `stop.signal`: many pending decisions at once (people take hours) would pile listeners on
   * that one signal (Node warns past 10: MaxListenersExceededWarning).
   */
  const lifetimes = new Set<AbortController>()
  const markHandled = (id: string) => {
    handled.add(id)
    if (handled.size > 10_000) handled.delete(handled.values().next().value as string)
  }

  const onMessage = async (message: DurableMessage) => {
    const decoded = decodeMessage(message.data, options.schema, { maxBytes: bus.maxPayload })
    if (!decoded.ok) {
      message.ack()
      options.report(message.subject, message.data, decoded.error as SignalboxError)
      return
    }
    const request = decoded.value
    const id = options.idOf(request)
    // A request replayed from the log may have been settled long ago: know every settlement
    // stored so far before asking anyone (else a restarted service asks a person again).
    await caughtUp
    if (stop.signal.aborted) return message.nak()
    const remaining = options.deadlineOf(request) - clock.now()
    if (settledBy(id, request) || handled.has(id) || remaining <= 0) {
      message.ack()
      return
    }
    if (inFlight.has(id) || storing.has(id)) {
      const copies = followers.get(id)
      if (copies === undefined) followers.set(id, [message])
      else copies.push(message)
      return
    }
    // `lifetime`: deadline and stop. `deciding`: also a settlement elsewhere (only while deciding).
    const lifetime = new AbortController()
    const deciding = new AbortController()
    const onLifetimeAbort = () => deciding.abort(lifetime.signal.reason)
    lifetime.signal.addEventListener('abort', onLifetimeAbort, { once: true })
    inFlight.set(id, { controller: deciding, request })
    lifetimes.add(lifetime)
    // Clamped: a timer past 2^31-1 ms fires at once in Node, which would expire a far-off request now.
    const deadline = clock.setTimeout(
      () => lifetime.abort(new RequestWithdrawnError('expired')),
      Math.min(remaining, MAX_TIMER_MS),
    )
    /** This copy and every copy that came meanwhile. */
    const each = (settle: (copy: DurableMessage) => void) => {
      settle(message)
      for (const copy of followers.get(id) ?? []) settle(copy)
    }
    const keepAlive = setInterval(() => each((copy) => copy.working()), ACK_WAIT_MS / 3)
    try {
      // A decider that ignores its signal (a stuck reviewer) must not keep the request in flight
      // (and its message alive) after the deadline, a settlement elsewhere or a stop.
      const reply = await untilAborted(options.decide(request, deciding.signal), deciding.signal)
      inFlight.delete(id)
      storing.add(id)
      await untilAborted(options.publish(request, reply, lifetime.signal), lifetime.signal)
      markHandled(id)
      each((copy) => copy.ack())
    } catch (error) {
      if (stop.signal.aborted) {
        // Shutting down: leave it for another instance.
        each((copy) => copy.nak())
      } else if (deciding.signal.aborted) {
        // Expired, or settled by someone else: nobody is waiting for this answer any more.
        each((copy) => copy.ack())
      } else {
        options.onError?.(error, request)
        each((copy) => copy.nak(1_000))
      }
    } finally {
      inFlight.delete(id)
      storing.delete(id)
      followers.delete(id)
      clearInterval(keepAlive)
      clock.clearTimeout(deadline)
      lifetimes.delete(lifetime)
      lifetime.signal.removeEventListener('abort', onLifetimeAbort)
    }
  }

  // Settlements first: the watchers replay every stored answer (and withdrawal), and requests wait
  // until they have caught up (been idle for a moment), so a request answered before this instance
  // started is skipped, not asked again.
  const sources = [options.settlements, options.withdrawals].filter((source) => source !== undefined) as Settlements<z.ZodType>[]
  /** Replies seen on each settlement subject, by request id; applied only when they match the request. */
  const settlements = new Map<Settlements<z.ZodType>, Map<string, unknown>>(sources.map((source) => [source, new Map()]))
  const settledBy = (id: string, request: z.output<S>): boolean =>
    sources.some((source) => {
      const reply = settlements.get(source)?.get(id)
      return reply !== undefined && (source.matches ? source.matches(request, reply) : true)
    })
  let caughtUpNow: () => void = () => {}
  const caughtUp = new Promise<void>((resolve) => {
    caughtUpNow = resolve
  })
  let idleTimer: ReturnType<typeof setTimeout> | undefined
  let isCaughtUp = false
  let watching = false
  const markCaughtUp = () => {
    isCaughtUp = true
    if (idleTimer !== undefined) clearTimeout(idleTimer)
    caughtUpNow()
  }
  const armCatchUp = () => {
    if (isCaughtUp || !watching) return
    if (idleTimer !== undefined) clearTimeout(idleTimer)
    idleTimer = setTimeout(markCaughtUp, CATCH_UP_IDLE_MS)
  }
  stop.signal.addEventListener('abort', markCaughtUp, { once: true })
  const watches: Subscription[] = sources.map((source) =>
    bus.durableConsume(
      source.subject,
      (message) => {
        message.ack()
        armCatchUp()
        const decoded = decodeMessage(message.data, source.schema, { maxBytes: bus.maxPayload })
        if (!decoded.ok) return
        if (source.trusted && !source.trusted(decoded.value)) return
        const id = source.idOf(decoded.value)
        const running = inFlight.get(id)
        // A reply that does not match what is being asked here settles nothing, and is not reported as if it did.
        if (running && source.matches && !source.matches(running.request, decoded.value)) return
        const seen = settlements.get(source) as Map<string, unknown>
        seen.set(id, decoded.value)
        if (seen.size > 10_000) seen.delete(seen.keys().next().value as string)
        if (running) running.controller.abort(new RequestWithdrawnError(source.withdrawal ?? 'settled-elsewhere'))
        source.onSettled?.(id, decoded.value)
      },
      { deliverAll: true, signal: stop.signal, ...(source.purpose ? { purpose: source.purpose } : {}) },
    ),
  )
  if (watches.length > 0) {
    Promise.all(watches.map((watch) => watch.ready)).then(() => {
      watching = true
      armCatchUp()
    }, markCaughtUp)
  } else markCaughtUp()

  const subscription: Subscription = bus.durableConsume(
    options.subject,
    (message) => {
      // Handled concurrently: one slow person must not hold the queue.
      onMessage(message).catch((error) => options.onError?.(error, undefined as z.output<S>))
    },
    {
      ...(options.mode === 'shared' ? { durableName: options.group } : { purpose: options.privatePurpose ?? 'requests' }),
      // Requests published before this instance started are still pending: read the log.
      deliverAll: true,
      ackWaitMs: ACK_WAIT_MS,
      signal: stop.signal,
    },
  )

  return {
    ready: Promise.all([subscription.ready, ...watches.map((watch) => watch.ready), caughtUp]).then(() => {}),
    get inFlight() {
      return new Set(inFlight.keys())
    },
    settled(id) {
      markHandled(id)
      inFlight.get(id)?.controller.abort(new RequestWithdrawnError('settled-elsewhere'))
    },
    close() {
      stop.abort()
      for (const lifetime of lifetimes) lifetime.abort(new RequestWithdrawnError('stopping'))
      subscription.unsubscribe()
      for (const watch of watches) watch.unsubscribe()
    },
  }
}
