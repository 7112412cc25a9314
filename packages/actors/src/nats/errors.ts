/**
 * nats.js errors, normalized once at the boundary into bus errors (like nats.js's own
 * `jserrors.ts`), and the questions the transport asks about them (retry? stream gone?).
 */
import { JetStreamApiError } from '@nats-io/jetstream'
import { errors as natsErrors } from '@nats-io/transport-node'
import { AbortedError } from '@signalbox/core'
import {
  BusClosedError,
  BusError,
  BusNoRespondersError,
  BusPayloadTooLargeError,
  BusTimeoutError,
  InvalidSubjectError,
} from '@signalbox/core/bus'
import { asError } from '@signalbox/core/internal'

/** Normalizes a nats.js error once, at the boundary, into a bus error. */
export function mapNatsError(error: unknown, subject: string, operation: string, timeoutMs?: number): Error {
  if (BusError.is(error) || AbortedError.is(error)) return error
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
  return new BusError('BUS_ERROR', `NATS ${operation} on "${subject}" failed: ${asError(error).message}`, { cause: error })
}

/** A durable publish the stream (or the client) refused for good. */
export function mapDurableError(error: unknown, subject: string, maxPayload: number): Error {
  if (error instanceof natsErrors.InvalidArgumentError && /max_payload/.test(error.message)) {
    return new BusPayloadTooLargeError(subject, Number.NaN, maxPayload)
  }
  if (error instanceof JetStreamApiError) {
    return new BusError('BUS_DURABLE_REJECTED', `The stream refused the message on "${subject}": ${error.message}`, {
      cause: error,
      details: { subject, apiCode: error.code },
    })
  }
  if (isPermissionViolation(error)) {
    return new BusError('BUS_PERMISSION_DENIED', `This user may not publish on "${subject}" (permissions violation).`, {
      cause: error,
      details: { subject },
    })
  }
  return mapNatsError(error, subject, 'durablePublish')
}

/** A read of the durable log (`durableLast`) that failed. */
export function mapDurableReadError(error: unknown, subject: string): Error {
  if (isPermissionViolation(error)) {
    return new BusError('BUS_PERMISSION_DENIED', `This user may not read "${subject}" from the stream (permissions violation).`, {
      cause: error,
      details: { subject },
    })
  }
  return mapNatsError(error, subject, 'durableLast')
}

export function requestAborted(subject: string, signal: AbortSignal): AbortedError {
  return new AbortedError(`Request on "${subject}" was aborted.`, signal.reason)
}

export function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code
}

export function isNoResponders(error: unknown): boolean {
  if (error instanceof natsErrors.RequestError) return error.isNoResponders()
  return error instanceof Error && (error.name === 'JetStreamNotEnabled' || error instanceof natsErrors.NoRespondersError)
}

/** Failures of one durable publish attempt that a later attempt can fix (server restarting, link down). */
export function isRetryable(error: unknown): boolean {
  // Refused by the server's permissions: publishing again cannot succeed.
  if (isPermissionViolation(error)) return false
  if (error instanceof natsErrors.TimeoutError) return true
  if (error instanceof natsErrors.RequestError) return true
  if (error instanceof natsErrors.ConnectionError) return true
  if (error instanceof natsErrors.NoRespondersError) return true
  if (error instanceof Error && error.name === 'JetStreamNotEnabled') return true
  // "JetStream system temporarily unavailable" and friends.
  if (error instanceof JetStreamApiError) return error.status === 503
  return false
}

/** The server refused the subject for this user (least privilege), directly or as a request's cause. */
export function isPermissionViolation(error: unknown): boolean {
  if (error instanceof natsErrors.PermissionViolationError) return true
  return error instanceof natsErrors.RequestError && error.cause instanceof natsErrors.PermissionViolationError
}
