import { setImmediate as nextMacrotask } from 'node:timers/promises'
import { AbortedError, type SignalboxError } from '@signalbox/core'
import type { Bus, Subscription } from '@signalbox/core/bus'
import { decodeMessage } from '@signalbox/core/protocol'
import type { z } from 'zod/v4'
import type { RejectionReporter } from './rejections.ts'

interface Waiter<T> {
  resolve(value: T): void
  reject(error: unknown): void
  /** Why this reply cannot be applied to the pending request, or `undefined` when it can. */
  check(reply: T, storedAt: number | undefined): string | undefined
}

/** A reply as the durable log kept it: `storedAt` is the log's time (absent on a bus that has none). */
export interface StoredReply<T> {
  reply: T
  storedAt: number | undefined
}

export interface ReplyRejection<T, C> {
  id: string
  reply: T
  reason: string
  /** What the request was (its context), when this process made it. */
  context: C
}

/**
 * Waits for replies (decisions, answers) that arrive on a durable subject, matched to pending
 * requests by id. The first valid reply wins; a reply for a request already settled (late or
 * duplicate) or one that does not match the request is reported, never applied. Replies for
 * ids this process never asked about belong to another host of the same agent and are ignored.
 *
 * A copy of the winning reply is reported as "already settled" only after the winner was applied:
 * the caller applies (and audits) it in the reactions to the promise `expect` returned, and a
 * copy may be delivered right behind the winner, before those reactions ran. Reported at once, the
 * audit trail would show the rejection of a decision before the grant it duplicates.
 */
export class DurableReplyWaiter<S extends z.ZodType, C> {
  readonly #bus: Bus
  readonly #schema: S
  readonly #idOf: (reply: z.output<S>) => string
  readonly #onRejected: (rejection: ReplyRejection<z.output<S>, C>) => void
  readonly #reportInvalid: RejectionReporter
  readonly #pending = new Map<string, Waiter<z.output<S>> & { context: C }>()
  /** Recently settled ids (oldest first) with their context, to tell a late reply from a stranger's. */
  readonly #settled = new Map<string, C>()
  /**
   * Ids whose winning reply was handed to its waiter and may not be applied yet: resolves once it
   * is (the next macrotask; every promise reaction of the caller runs before it).
   */
  readonly #handingOver = new Map<string, Promise<void>>()
  readonly #consumers = new Map<string, Subscription>()
  /**
   * With `replay`: replies (oldest first) for ids nobody waits for yet. A resumed run asks again
   * for a request made before a restart; its reply may already be in the replayed log.
   */
  readonly #unclaimed = new Map<string, StoredReply<z.output<S>>>()
  /** Recently applied replies (bounded): what `stored` finds for a request already answered. */
  readonly #applied = new Map<string, StoredReply<z.output<S>>>()
  #replay: boolean

  constructor(options: {
    bus: Bus
    schema: S
    idOf: (reply: z.output<S>) => string
    onRejected: (rejection: ReplyRejection<z.output<S>, C>) => void
    reportInvalid: RejectionReporter
    /** Read the reply subjects from the start of the log (replies that came while no process listened). */
    replay?: boolean
  }) {
    this.#replay = options.replay ?? false
    this.#bus = options.bus
    this.#schema = options.schema
    this.#idOf = options.idOf
    this.#onRejected = options.onRejected
    this.#reportInvalid = options.reportInvalid
  }

  /**
   * Starts (once) the consumer of `subject` and resolves when it is live. `replay`: this wait
   * belongs to a stored run, so read the replies from the start of the log (when the consumer is
   * made here; later waits share it). `purpose`: the consumer's name under least privilege
   * (`<user>_<purpose>`), one per subject.
   */
  listen(subject: string, replay = false, purpose?: string): Promise<void> {
    let consumer = this.#consumers.get(subject)
    if (!consumer) {
      if (replay) this.#replay = true
      consumer = this.#bus.durableConsume(
        subject,
        (message) => {
          message.ack()
          const decoded = decodeMessage(message.data, this.#schema, { maxBytes: this.#bus.maxPayload })
          if (!decoded.ok) {
            this.#reportInvalid(message.subject, message.data, decoded.error as SignalboxError)
            return
          }
          return this.#route(decoded.value, message.storedAt)
        },
        {
          ...(this.#replay ? { deliverAll: true } : {}),
          ...(purpose !== undefined ? { purpose } : {}),
        },
      )
      this.#consumers.set(subject, consumer)
    }
    return consumer.ready
  }

  /**
   * Resolves once the consumer of `subject` has handed over every reply the log held when it was
   * made (with `replay`: every reply given while no process listened).
   */
  async caughtUp(subject: string, replay = false, purpose?: string): Promise<void> {
    await this.listen(subject, replay, purpose)
    const consumer = this.#consumers.get(subject)
    await (consumer?.caughtUp ?? consumer?.ready)
  }

  /** The reply read for `id` (applied or still unclaimed), with the log's time; `undefined` when none came. */
  stored(id: string): StoredReply<z.output<S>> | undefined {
    return this.#applied.get(id) ?? this.#unclaimed.get(id)
  }

  /** Registers interest in `id` before the request goes out, so no fast reply is missed. */
  expect(
    id: string,
    context: C,
    check: (reply: z.output<S>, storedAt: number | undefined) => string | undefined,
    signal: AbortSignal,
  ): Promise<z.output<S>> {
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(new AbortedError('The request was withdrawn.'))
      const onAbort = () => {
        this.#settle(id, context)
        reject(new AbortedError('The request was withdrawn.'))
      }
      signal.addEventListener('abort', onAbort, { once: true })
      const early = this.#unclaimed.get(id)
      if (early !== undefined && check(early.reply, early.storedAt) === undefined) {
        this.#unclaimed.delete(id)
        this.#remember(id, early)
        this.#settle(id, context)
        signal.removeEventListener('abort', onAbort)
        this.#handOver(id)
        return resolve(early.reply)
      }
      this.#pending.set(id, {
        resolve: (value) => {
          signal.removeEventListener('abort', onAbort)
          resolve(value)
        },
        reject: (error) => {
          signal.removeEventListener('abort', onAbort)
          reject(error)
        },
        check,
        context,
      })
    })
  }

  /**
   * Lets go of `id` without settling it: its reply, when one comes, belongs to the process that
   * asks again (a stored run that resumes elsewhere), so it is no late reply to report here.
   */
  forget(id: string): void {
    this.#settled.delete(id)
  }

  /** Fails every pending wait (the actor is shutting down). */
  close(reason: Error): void {
    for (const consumer of this.#consumers.values()) consumer.unsubscribe()
    this.#consumers.clear()
    for (const [id, waiter] of this.#pending) {
      this.#settle(id, waiter.context)
      waiter.reject(reason)
    }
  }

  /** A promise while a rejection waits for the winner's application (a failure is the handler's). */
  #route(reply: z.output<S>, storedAt: number | undefined): Promise<void> | undefined {
    const id = this.#idOf(reply)
    const waiter = this.#pending.get(id)
    if (!waiter) {
      if (this.#settled.has(id)) {
        const rejection = {
          id,
          reply,
          reason: 'the request was already settled (late or duplicate reply)',
          context: this.#settled.get(id) as C,
        }
        // Behind the winner's application, never before it (see the class comment).
        const handingOver = this.#handingOver.get(id)
        if (handingOver !== undefined) return handingOver.then(() => this.#onRejected(rejection))
        this.#onRejected(rejection)
      } else if (this.#replay) {
        this.#unclaimed.set(id, { reply, storedAt })
        if (this.#unclaimed.size > 1_000) this.#unclaimed.delete(this.#unclaimed.keys().next().value as string)
      }
      return
    }
    const mismatch = waiter.check(reply, storedAt)
    if (mismatch !== undefined) {
      this.#onRejected({ id, reply, reason: mismatch, context: waiter.context })
      return
    }
    this.#remember(id, { reply, storedAt })
    this.#settle(id, waiter.context)
    this.#handOver(id)
    waiter.resolve(reply)
  }

  /** Marks `id`'s winning reply as being handed over until the caller's reactions to it have run. */
  #handOver(id: string): void {
    const handedOver = nextMacrotask().then(() => {
      this.#handingOver.delete(id)
    })
    this.#handingOver.set(id, handedOver)
  }

  #remember(id: string, stored: StoredReply<z.output<S>>): void {
    this.#applied.set(id, stored)
    if (this.#applied.size > 1_000) this.#applied.delete(this.#applied.keys().next().value as string)
  }

  #settle(id: string, context: C): void {
    this.#pending.delete(id)
    this.#settled.set(id, context)
    if (this.#settled.size > 10_000) {
      const oldest = this.#settled.keys().next().value
      if (oldest !== undefined) this.#settled.delete(oldest)
    }
  }
}
