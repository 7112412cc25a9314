import { type Clock, type SignalboxError, systemClock } from '@signalbox/core'
import { type Bus, createSubjects, type Subjects } from '@signalbox/core/bus'
import { payloadSample } from '@signalbox/core/internal'
import { encodeMessage, PROTOCOL_VERSION, type RejectionMessage, type WireError } from '@signalbox/core/protocol'
import { OTHER, type RejectionLimits, RejectionThrottle } from './rejection-throttle.ts'

/** The protocol's limit on `error.message` (a longer one makes the whole reply invalid for the peer). */
export const MAX_ERROR_MESSAGE_LENGTH = 4096
/** Beyond this, `error.details` are replaced by a note: a reply must never outgrow the bus. */
const MAX_DETAILS_BYTES = 16 * 1024

/**
 * An error as it may go on the wire: code and message within the protocol's limits, details
 * bounded. Bad input can make an error huge (a megabyte-long "type" is quoted in the message
 * and the details); unbounded, the reply would be invalid or larger than the bus carries, and
 * the sender would get no answer at all.
 */
export function toWireError(error: { code: string; message: string; details?: Record<string, unknown> | undefined }): WireError {
  const code = truncate(String(error.code || 'ERROR'), 128)
  const message = truncate(String(error.message ?? ''), MAX_ERROR_MESSAGE_LENGTH)
  let details = error.details
  if (details !== undefined) {
    let size: number
    try {
      size = Buffer.byteLength(JSON.stringify(details))
    } catch {
      size = Number.POSITIVE_INFINITY
    }
    if (size > MAX_DETAILS_BYTES) details = { truncated: true, size: Number.isFinite(size) ? size : null }
  }
  return { code, message, ...(details === undefined ? {} : { details }) }
}

/** `text` cut to at most `max` characters (marked with an ellipsis when cut). */
export function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

/**
 * Records a message that was refused and had nobody to reply to. Never throws. `published` is
 * called when the rejection went out one by one, not only counted in a flood summary: callers keep
 * their own per-message records (audit entries) to those, so a flood cannot grow them either.
 */
export type RejectionReporter = (
  subject: string,
  data: Uint8Array | string,
  error: SignalboxError,
  published?: () => void,
) => void

/**
 * Bad input on a publish-only subject has no reply subject: it is published as a `rejection`
 * on `<prefix>.errors.<component>` so an operator (and tests) can see it, and the actor goes on.
 * Under a flood, the reporter publishes the first `limits.burst` rejections of a window one by
 * one and the rest as one summary per (subject, code) with a `count` (`rejection-throttle.ts`),
 * so junk cannot grow the log without bound; the counts still add up to every rejection.
 */
export function createRejectionReporter(options: {
  bus: Bus
  component: string
  subjects?: Subjects
  clock?: Clock | undefined
  limits?: Partial<RejectionLimits>
  onRejected?: (rejection: RejectionMessage) => void
}): RejectionReporter {
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const subject = subjects.errors(options.component)
  const send = (message: RejectionMessage) => {
    try {
      options.onRejected?.(message)
      options.bus.publish(subject, encodeMessage(message))
    } catch {
      // A closed or reconnecting bus, a failing listener: the rejection is informational only.
    }
  }
  const throttle = new RejectionThrottle<RejectionMessage>(clock, options.limits ?? {}, (summaries) => {
    for (const { key, last, count } of summaries) {
      const what = key === OTHER ? 'rejections of various kinds' : `rejections like this one (${last.error.code})`
      send({
        ...last,
        error: {
          code: last.error.code,
          message: truncate(
            `${count} ${what} arrived in one window and were counted, not reported one by one (flood); the last: ${last.error.message}`,
            MAX_ERROR_MESSAGE_LENGTH,
          ),
        },
        count,
        at: clock.now(),
      })
    }
  })
  return (rejectedSubject, data, error, published) => {
    const wire = toWireError(error)
    const message: RejectionMessage = {
      v: PROTOCOL_VERSION,
      type: 'rejection',
      component: options.component,
      subject: rejectedSubject,
      error: { code: wire.code, message: wire.message },
      sample: payloadSample(data),
      at: clock.now(),
    }
    try {
      if (throttle.admit(`${rejectedSubject} ${wire.code}`, message) === 'aggregated') return
      send(message)
      published?.()
    } catch {
      // Never throws: see the type.
    }
  }
}

/** A `Nats-Msg-Id` header value: no control characters (a CR or LF would break the header). */
export function msgIdPart(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: replacing control characters is the point
  return text.replace(/[\x00-\x1f\x7f]/g, '_').slice(0, 512)
}
