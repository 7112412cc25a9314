/**
 * Ed25519 signatures with nkeys: `signer` is the public nkey, `signature` the 64-byte signature
 * in unpadded base64url, both carried in the message next to the fields they cover.
 */

import { SignalboxError } from '@signalbox/core'
import { encodingProblem, type Signed, signingInput } from './canonical.ts'
import { assertPublicKey, seedKey, verifyEd25519 } from './ed25519.ts'

export class SigningKeyError extends SignalboxError {
  constructor(message: string, options: { cause?: unknown } = {}) {
    super('SIGNING_KEY_INVALID', message, { ...options, fault: 'user' })
  }
}

/** A key pair that signs; built from an nkey seed (`SU...`), which it never reveals. */
export interface Signer {
  readonly publicKey: string
  sign<T extends Signed>(message: T): T & { signer: string; signature: string }
  /** A raw ed25519 signature over `bytes` (for encodings defined elsewhere, such as audit entries). */
  signBytes(bytes: Uint8Array): Uint8Array
}

/** Reads an nkey seed (text or bytes, surrounding whitespace ignored). The error never quotes the seed. */
export function createSigner(seed: string | Uint8Array): Signer {
  const text = (typeof seed === 'string' ? seed : new TextDecoder().decode(seed)).trim()
  let key: ReturnType<typeof seedKey>
  try {
    key = seedKey(text)
  } catch (error) {
    throw new SigningKeyError('not a valid nkey seed (expected a seed such as the output of `nk -gen user`)', {
      cause: error instanceof Error ? new Error(error.message) : undefined,
    })
  }
  const { publicKey } = key
  return {
    publicKey,
    sign(message) {
      const { signer: _s, signature: _sig, ...fields } = message
      const signature = Buffer.from(key.sign(signingInput(fields, publicKey))).toString('base64url')
      return { ...message, signer: publicKey, signature }
    },
    signBytes: (bytes) => key.sign(bytes),
  }
}

export type SignatureCheck =
  | { ok: true; signer: string }
  | { ok: false; code: 'unsigned' | 'malformed' | 'bad-signature'; reason: string; signer?: string }

const BASE64URL = /^[A-Za-z0-9_-]{86}$/

/** Whether `message` carries a valid signature by the key it names (who that key is, is the policy's question). */
export function verifySignature(message: Signed): SignatureCheck {
  const { signer, signature } = message
  if (signer === undefined && signature === undefined) return { ok: false, code: 'unsigned', reason: 'the message is not signed' }
  if (typeof signer !== 'string' || typeof signature !== 'string') {
    return { ok: false, code: 'malformed', reason: 'signer and signature must both be strings' }
  }
  try {
    assertPublicKey(signer)
  } catch {
    return { ok: false, code: 'malformed', reason: 'signer is not a public nkey' }
  }
  if (!BASE64URL.test(signature)) {
    return { ok: false, code: 'malformed', reason: 'signature is not 64 bytes of unpadded base64url', signer }
  }
  const { signer: _s, signature: _sig, ...fields } = message
  const problem = encodingProblem(fields)
  if (problem) return { ok: false, code: 'malformed', reason: problem, signer }
  const valid = verifyEd25519(signer, signingInput(fields, signer), Buffer.from(signature, 'base64url'))
  return valid ? { ok: true, signer } : { ok: false, code: 'bad-signature', reason: 'the signature does not verify', signer }
}
