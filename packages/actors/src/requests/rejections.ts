import { type Clock, type SignalboxError, systemClock } from '@signalbox/core'
import { type Bus, createSubjects, type Subjects } from '@signalbox/core/bus'
import { payloadSample } from '@signalbox/core/internal'
import { encodeMessage, PROTOCOL_VERSION, type RejectionMessage, type WireError } from '@signalbox/core/protocol'

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

/** Records a message that was refused and had nobody to reply to. Never throws. */
export type RejectionReporter = (subject: string, data: Uint8Array | string, error: SignalboxError) => void

/**
 * Bad input on a publish-only subject has no reply subject: it is published as a `rejection`
 * on `<prefix>.errors.<component>` so an operator (and tests) can see it, and the actor goes on.
 */
export function createRejectionReporter(options: {
  bus: Bus
  component: string
  subjects?: Subjects
  clock?: Clock | undefined
  onRejected?: (rejection: RejectionMessage) => void
}): RejectionReporter {
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const subject = subjects.errors(options.component)
  return (rejectedSubject, data, error) => {
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
      options.onRejected?.(message)
      options.bus.publish(subject, encodeMessage(message))
    } catch {
      // A closed or reconnecting bus, a failing listener: the rejection is informational only.
    }
  }
}

/** A `Nats-Msg-Id` header value: no control characters (a CR or LF would break the header). */
export function msgIdPart(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: replacing control characters is the point
  return text.replace(/[\x00-\x1f\x7f]/g, '_').slice(0, 512)
}
