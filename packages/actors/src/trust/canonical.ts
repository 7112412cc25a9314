/**
 * The bytes a signature covers (docs/protocol.md, "Signing"): a fixed domain tag, then the JSON
 * object of exactly the fields listed for the message's `type` that the message carries, keys
 * sorted, no whitespace. Fixed lists (not "every field") keep the encoding reproducible by a
 * foreign signer from the doc alone; the argument digest stands in for the arguments (and the
 * edited digest for edited ones).
 */
import { canonicalJson } from '@signalbox/core/protocol'

export const SIGNATURE_DOMAIN = 'signalbox-signature-v1\n'

/** Signed field lists per message type; `signer` is always included, `signature` never. */
export const SIGNED_FIELDS = {
  'approval.request': ['v', 'type', 'requestId', 'agentId', 'runId', 'callId', 'toolName', 'digest', 'deadline', 'requestedAt'],
  'approval.decision': [
    'v',
    'type',
    'requestId',
    'callId',
    'digest',
    'approved',
    'reason',
    'reviewer',
    'decidedAt',
    'editedDigest',
    'deadline',
  ],
  answer: ['v', 'type', 'questionId', 'answer', 'answeredBy', 'answeredAt'],
  steer: ['v', 'type', 'agentId', 'steerId', 'text', 'from', 'runId', 'sentAt'],
  'control.cancel': ['v', 'type', 'agentId', 'runId', 'reason', 'from', 'sentAt'],
  'approval.withdrawn': ['v', 'type', 'requestId', 'agentId', 'callId', 'digest', 'reason', 'by', 'withdrawnAt'],
  'question.withdrawn': ['v', 'type', 'questionId', 'agentId', 'callId', 'reason', 'by', 'withdrawnAt'],
} as const satisfies Record<string, readonly string[]>

export type SignableType = keyof typeof SIGNED_FIELDS

/** Fields without which a message of that type cannot be signed (the rest are optional). */
const REQUIRED: Record<SignableType, readonly string[]> = {
  'approval.request': ['requestId', 'agentId', 'callId', 'toolName', 'digest', 'requestedAt'],
  'approval.decision': ['requestId', 'callId', 'digest', 'approved', 'reviewer', 'decidedAt'],
  answer: ['questionId', 'answer', 'answeredBy', 'answeredAt'],
  steer: ['agentId', 'steerId', 'text', 'from', 'sentAt'],
  'control.cancel': ['agentId', 'from', 'sentAt'],
  'approval.withdrawn': ['requestId', 'agentId', 'callId', 'digest', 'reason', 'withdrawnAt'],
  'question.withdrawn': ['questionId', 'agentId', 'callId', 'reason', 'withdrawnAt'],
}

/** A message as it travels: its own fields plus the signer's public nkey and the signature. */
export interface Signed {
  signer?: unknown
  signature?: unknown
  [field: string]: unknown
}

export function isSignableType(type: unknown): type is SignableType {
  return typeof type === 'string' && Object.hasOwn(SIGNED_FIELDS, type)
}

const LONE_SURROGATE = /\p{Surrogate}/u

/** Why `message` has no canonical encoding, or undefined when it has one. */
export function encodingProblem(message: Signed): string | undefined {
  if (!isSignableType(message.type)) return `messages of type ${JSON.stringify(message.type)} are not signed`
  if (message.v !== 1) return 'only protocol version 1 is signed'
  for (const field of REQUIRED[message.type]) {
    if (message[field] === undefined) return `${field} is missing`
  }
  // Edited arguments are covered through their digest, as the call's are through `digest`.
  if (message.type === 'approval.decision' && message.arguments !== undefined && message.editedDigest === undefined)
    return 'editedDigest is missing (edited arguments are signed through it)'
  for (const field of SIGNED_FIELDS[message.type]) {
    const value = message[field]
    if (value === undefined) continue
    if (typeof value === 'string') {
      if (LONE_SURROGATE.test(value)) return `${field} is not well-formed Unicode`
    } else if (typeof value === 'number') {
      if (!Number.isSafeInteger(value)) return `${field} must be an integer`
    } else if (typeof value !== 'boolean') {
      return `${field} must be a string, an integer or a boolean`
    }
  }
  return undefined
}

/** The exact bytes signed for `message` with `signer` (a public nkey). Throws on an unencodable message. */
export function signingInput(message: Signed, signer: string): Uint8Array {
  const problem = encodingProblem(message)
  if (problem) throw new TypeError(`cannot encode the message for signing: ${problem}`)
  const body: Record<string, unknown> = { signer }
  for (const field of SIGNED_FIELDS[message.type as SignableType]) {
    if (message[field] !== undefined) body[field] = message[field]
  }
  return new TextEncoder().encode(SIGNATURE_DOMAIN + canonicalJson(body))
}
