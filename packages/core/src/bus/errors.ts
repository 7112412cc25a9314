/**
 * Bus failures, one small class per failure with a stable `code` (the code is what crosses
 * process boundaries; see `serializeError`). Both transports throw exactly these, so callers
 * never see a transport's own error types. An aborted signal is the core `AbortedError`.
 */
import { type ErrorFault, SignalboxError } from '../errors.ts'

/** Base class of every bus failure, for `BusError.is(error)` checks. */
export class BusError extends SignalboxError {
  constructor(
    code: string,
    message: string,
    options: { cause?: unknown; fault?: ErrorFault; details?: Record<string, unknown> } = {},
  ) {
    super(code, message, options)
  }
}

/** A request got no reply within its timeout (the responder exists but is slow or gone). */
export class BusTimeoutError extends BusError {
  readonly subject: string
  readonly timeoutMs: number
  constructor(subject: string, timeoutMs: number, cause?: unknown) {
    super('BUS_TIMEOUT', `No reply on "${subject}" within ${timeoutMs} ms.`, {
      cause,
      fault: 'peer',
      details: { subject, timeoutMs },
    })
    this.subject = subject
    this.timeoutMs = timeoutMs
  }
}

/** A request found nobody subscribed to its subject (reported at once, not after the timeout). */
export class BusNoRespondersError extends BusError {
  readonly subject: string
  constructor(subject: string, cause?: unknown) {
    super('BUS_NO_RESPONDERS', `No responders on "${subject}".`, { cause, fault: 'peer', details: { subject } })
    this.subject = subject
  }
}

/** The payload (plus headers, on NATS) is larger than the bus accepts. Nothing was sent. */
export class BusPayloadTooLargeError extends BusError {
  readonly subject: string
  readonly size: number
  readonly max: number
  constructor(subject: string, size: number, max: number) {
    super('BUS_PAYLOAD_TOO_LARGE', `Payload of ${size} bytes on "${subject}" exceeds the bus maximum of ${max} bytes.`, {
      fault: 'runtime',
      details: { subject, size, max },
    })
    this.subject = subject
    this.size = size
    this.max = max
  }
}

/** The bus was closed (by `close()`, or the connection closed for good). */
export class BusClosedError extends BusError {
  readonly operation: string
  constructor(operation: string, cause?: unknown) {
    super('BUS_CLOSED', `Cannot ${operation}: the bus is closed.`, { cause, fault: 'runtime', details: { operation } })
    this.operation = operation
  }
}

/** A subject or one of its tokens is not legal (empty, `.`, `*`, `>`, whitespace, too long, misplaced wildcard). */
export class InvalidSubjectError extends BusError {
  /** The offending token, or the whole subject when the problem is its shape. */
  readonly token: string
  readonly reason: string
  constructor(token: string, reason: string) {
    super('SUBJECT_INVALID', `Invalid subject token "${token}": ${reason}.`, {
      fault: 'user',
      details: { token, reason },
    })
    this.token = token
    this.reason = reason
  }
}

/**
 * `durablePublish`/`durableConsume` on a subject the durable store does not cover (on NATS:
 * no subject of the JetStream stream matches it), so the message would not be kept.
 */
export class DurableSubjectError extends BusError {
  readonly subject: string
  readonly durableSubjects: readonly string[]
  constructor(subject: string, durableSubjects: readonly string[]) {
    super(
      'BUS_NOT_DURABLE',
      `Subject "${subject}" is not covered by the durable store (durable subjects: ${durableSubjects.join(', ')}).`,
      { fault: 'user', details: { subject, durableSubjects: [...durableSubjects] } },
    )
    this.subject = subject
    this.durableSubjects = durableSubjects
  }
}

/** A durable consumer name is already used with a different subject filter. */
export class DurableConsumerConflictError extends BusError {
  readonly durableName: string
  constructor(durableName: string, existingSubject: string, requestedSubject: string, cause?: unknown) {
    super(
      'BUS_CONSUMER_CONFLICT',
      `Durable consumer "${durableName}" already consumes "${existingSubject}"; it cannot also consume "${requestedSubject}".`,
      { cause, fault: 'user', details: { durableName, existingSubject, requestedSubject } },
    )
    this.durableName = durableName
  }
}

/** Where a subscriber's handler failed; handed to the bus's `onHandlerError` option. */
export interface HandlerErrorContext {
  /** The subject of the message being handled. */
  readonly subject: string
  /** The subject (pattern) the subscription listens on. */
  readonly subscription: string
  readonly durable: boolean
}

export type HandlerErrorListener = (error: unknown, context: HandlerErrorContext) => void
