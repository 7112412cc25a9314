import type { z } from 'zod/v4'
import { SignalboxError } from '../errors.ts'
import { formatIssues } from '../schema.ts'
import { type ErrorMessage, PROTOCOL_VERSION, type WireError } from './schemas.ts'

export type ProtocolErrorCode =
  | 'PROTOCOL_INVALID_JSON'
  | 'PROTOCOL_UNSUPPORTED_VERSION'
  | 'PROTOCOL_UNEXPECTED_TYPE'
  | 'PROTOCOL_INVALID_MESSAGE'
  | 'PROTOCOL_TOO_LARGE'

/** A bus message that is not a valid signalbox v1 message. The sender is at fault. */
export class ProtocolError extends SignalboxError {
  constructor(code: ProtocolErrorCode, message: string, details?: Record<string, unknown>) {
    super(code, message, { fault: 'peer', ...(details ? { details } : {}) })
  }
}

// A byte-order mark is kept (and then refused by JSON.parse), whether bytes or a string arrive.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
const encoder = new TextEncoder()

export function encodeMessage(message: { v: number; type: string }): Uint8Array {
  return encoder.encode(JSON.stringify(message))
}

export type DecodeResult<T> = { ok: true; value: T } | { ok: false; error: ProtocolError }

/**
 * Parses bytes from the bus against one schema. Never throws: a bad message is a value the
 * caller replies to or records, so no input can crash an actor.
 */
export function decodeMessage<S extends z.ZodType>(
  data: Uint8Array | string,
  schema: S,
  options: { maxBytes?: number } = {},
): DecodeResult<z.output<S>> {
  const size = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength
  if (options.maxBytes !== undefined && size > options.maxBytes) {
    return fail('PROTOCOL_TOO_LARGE', `The message is ${size} bytes; the limit is ${options.maxBytes}.`, { size })
  }
  let json: unknown
  try {
    json = JSON.parse(typeof data === 'string' ? data : decoder.decode(data))
  } catch (error) {
    return fail('PROTOCOL_INVALID_JSON', `The payload is not valid UTF-8 JSON: ${(error as Error).message}`)
  }
  if (!json || typeof json !== 'object' || Array.isArray(json)) {
    return fail('PROTOCOL_INVALID_MESSAGE', 'The payload must be a JSON object with "v" and "type".')
  }
  // JSON.parse takes any depth, but everything after it (digests, signatures, display) recurses:
  // a value nested 100,000 deep would overflow the stack there, on every delivery.
  if (deeperThan(json, MAX_DEPTH)) {
    return fail('PROTOCOL_INVALID_MESSAGE', `The message is nested deeper than ${MAX_DEPTH} levels.`, { maxDepth: MAX_DEPTH })
  }
  const { v, type } = json as { v?: unknown; type?: unknown }
  if (v !== PROTOCOL_VERSION) {
    return fail(
      'PROTOCOL_UNSUPPORTED_VERSION',
      `Unsupported protocol version ${clip(JSON.stringify(v) ?? 'undefined', 40)}; this peer speaks v${PROTOCOL_VERSION}.`,
      { version: typeof v === 'number' || typeof v === 'string' ? v : null },
    )
  }
  const parsed = schema.safeParse(json)
  if (!parsed.success) {
    const typeIssue = parsed.error.issues.find((issue) => issue.path.length === 1 && issue.path[0] === 'type')
    // The sender controls `type` and the issues: bound what goes back into replies and logs.
    const shownType = clip(JSON.stringify(type) ?? 'undefined', 80)
    if (typeIssue) {
      return fail('PROTOCOL_UNEXPECTED_TYPE', `Unexpected message type ${shownType} on this subject.`, {
        type: typeof type === 'string' ? clip(type, 80) : null,
      })
    }
    const issues = formatIssues(parsed.error)
      .slice(0, MAX_ISSUES)
      .map((issue) => clip(issue, 200))
    const more = parsed.error.issues.length > MAX_ISSUES ? ` (+${parsed.error.issues.length - MAX_ISSUES} more)` : ''
    return fail('PROTOCOL_INVALID_MESSAGE', clip(`Invalid ${shownType} message: ${issues.join('; ')}${more}`, 2000), { issues })
  }
  return { ok: true, value: parsed.data }
}

const MAX_ISSUES = 20
/** Deepest nesting of objects and arrays a message may have (the message object itself is level 1). */
export const MAX_DEPTH = 64

/** Whether `value` nests objects/arrays more than `max` levels deep; iterative, so any depth is safe to check. */
function deeperThan(value: unknown, max: number): boolean {
  const stack: [unknown, number][] = [[value, 1]]
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number]
    if (current === null || typeof current !== 'object') continue
    if (depth > max) return true
    for (const child of Object.values(current)) if (child !== null && typeof child === 'object') stack.push([child, depth + 1])
  }
  return false
}

function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text
}

function fail(code: ProtocolErrorCode, message: string, details?: Record<string, unknown>): { ok: false; error: ProtocolError } {
  return { ok: false, error: new ProtocolError(code, message, details) }
}

/** The `error` reply for a failed request. */
export function errorMessage(error: WireError, inReplyTo?: string): ErrorMessage {
  return {
    v: PROTOCOL_VERSION,
    type: 'error',
    error: { code: error.code, message: error.message, ...(error.details ? { details: error.details } : {}) },
    ...(inReplyTo ? { inReplyTo } : {}),
  }
}

/** The first bytes of a payload, as text, for logs and rejection notices. */
export function payloadSample(data: Uint8Array | string, max = 200): string {
  const text = typeof data === 'string' ? data : Buffer.from(data.subarray(0, max * 4)).toString('utf8')
  return text.length > max ? `${text.slice(0, max)}…` : text
}
