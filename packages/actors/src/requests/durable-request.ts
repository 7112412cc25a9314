import type { Bus } from '@signalbox/core/bus'
import { encodeMessage, ProtocolError } from '@signalbox/core/protocol'
import type { z } from 'zod/v4'
import type { RejectionReporter } from './rejections.ts'
import { DurableReplyWaiter, type ReplyRejection } from './reply-waiter.ts'

export interface DurableRequesterOptions<S extends z.ZodType, C> {
  bus: Bus
  /** Schema of the replies (decisions, answers). */
  schema: S
  idOf(reply: z.output<S>): string
  /** Where the replies to a request (its context) come back. */
  replySubjectOf(context: C): string
  /** What a reply is, for the rejection report: `Decision`, `Answer`. */
  replyName: string
  report: RejectionReporter
  /**
   * The purpose of the reply consumer of a request's reply subject: its name under least privilege
   * (`<user>_<purpose>`, one per subject, e.g. `claw_decisions` for the agent `claw`).
   */
  purposeOf?(context: C): string
  /** After a rejected reply was reported: e.g. record it in the audit. */
  onRejected?(rejection: ReplyRejection<z.output<S>, C>): void
  /** Read replies from the start of the log: a request re-sent after a restart finds a reply given meanwhile. */
  replay?: boolean
}

export interface DurableRequest<S extends z.ZodType, C> {
  /** The request's id: its `Nats-Msg-Id`, and what the reply quotes. */
  id: string
  context: C
  subject: string
  message: { v: number; type: string }
  /** Why a reply cannot be applied to this request, or `undefined` when it can (`storedAt`: the log's time). */
  check?(reply: z.output<S>, storedAt: number | undefined): string | undefined
  /** The request belongs to a stored run: its replies are read from the start of the log (see `replay`). */
  replay?: boolean
  signal: AbortSignal
}

/**
 * The asking side of a request a person answers (an approval, a question): the request goes
 * out durably and the reply comes back on the durable path, so a server restart in between
 * loses neither. A late, duplicate or mismatched reply is reported, never applied.
 */
export class DurableRequester<S extends z.ZodType, C> {
  readonly #bus: Bus
  readonly #waiter: DurableReplyWaiter<S, C>
  readonly #replySubjectOf: (context: C) => string
  readonly #purposeOf: ((context: C) => string) | undefined

  constructor(options: DurableRequesterOptions<S, C>) {
    this.#bus = options.bus
    this.#replySubjectOf = options.replySubjectOf
    this.#purposeOf = options.purposeOf
    this.#waiter = new DurableReplyWaiter<S, C>({
      bus: options.bus,
      schema: options.schema,
      idOf: options.idOf,
      reportInvalid: options.report,
      ...(options.replay ? { replay: true } : {}),
      onRejected: (rejection) => {
        options.report(
          options.replySubjectOf(rejection.context),
          JSON.stringify(rejection.reply),
          new ProtocolError('PROTOCOL_INVALID_MESSAGE', `${options.replyName} rejected: ${rejection.reason}`),
          // Under a flood a rejection is only counted in a summary: then no audit entry per message either.
          () => options.onRejected?.(rejection),
        )
      },
    })
  }

  /** Sends the request and resolves with the first reply that passes `check`. */
  async request(request: DurableRequest<S, C>): Promise<z.output<S>> {
    return (await this.send(request)).reply
  }

  /**
   * Sends the request and resolves once it is stored and its reply can be received (the reply
   * consumer is live and the wait registered); `reply` then settles with the first reply that
   * passes `check`. Until this resolves, nobody may be shown the request: an answer given
   * before the reply consumer is live would never reach this process.
   */
  async send(request: DurableRequest<S, C>): Promise<{ reply: Promise<z.output<S>> }> {
    const { id, context, signal } = request
    // Aborted by the caller, or by us when the request could not be sent (nothing may wait for it then).
    const withdrawn = new AbortController()
    const replied = this.#waiter.expect(
      id,
      context,
      request.check ?? (() => undefined),
      AbortSignal.any([signal, withdrawn.signal]),
    )
    // The wait is registered first, so a person who answers at once (or a replayed reply) is not missed.
    replied.catch(() => {})
    try {
      await this.#waiter.listen(this.#replySubjectOf(context), request.replay ?? false, this.#purposeOf?.(context))
      await this.#bus.durablePublish(request.subject, encodeMessage(request.message), { msgId: id, signal })
    } catch (error) {
      withdrawn.abort(error)
      throw error
    }
    return { reply: replied }
  }

  /**
   * The reply to request `id` that counts after its deadline: one the log stored by `deadline`
   * (the server's timestamp, which a replier cannot backdate) and that `check` accepts (no reason
   * given); `undefined` when none does. In time means stored in time. Read once every reply
   * stored before the consumer began is in (from the start of the log when the consumer is made here).
   */
  async storedInTime(
    id: string,
    context: C,
    deadline: number,
    check: (reply: z.output<S>) => string | undefined,
  ): Promise<z.output<S> | undefined> {
    await this.#waiter.caughtUp(this.#replySubjectOf(context), true, this.#purposeOf?.(context))
    const stored = this.#waiter.stored(id)
    if (stored === undefined || stored.storedAt === undefined || stored.storedAt > deadline) return undefined
    return check(stored.reply) === undefined ? stored.reply : undefined
  }

  /** Lets go of a request whose wait stopped without settling it (its stored run goes on elsewhere): see `DurableReplyWaiter.forget`. */
  forget(id: string): void {
    this.#waiter.forget(id)
  }

  /** Stops listening; pending requests fail with `reason`. */
  close(reason: Error): void {
    this.#waiter.close(reason)
  }
}
