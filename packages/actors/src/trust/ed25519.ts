/**
 * ed25519 for nkeys through node:crypto. @nats-io/nkeys signs and verifies in JavaScript
 * (tweetnacl): ~30 ms per signature on a loaded machine, paid by every signed decision, answer,
 * steer, audit entry and gated call. The keys are the same 32 bytes (ed25519 is deterministic, so
 * the signatures are byte for byte those nkeys makes); nkeys still parses and checks the key text.
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto'
import { fromPublic, fromSeed } from '@nats-io/nkeys'

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

function base32Decode(text: string): Buffer {
  const out: number[] = []
  let bits = 0
  let value = 0
  for (const char of text) {
    const digit = ALPHABET.indexOf(char)
    if (digit < 0) throw new Error('not base32')
    value = (value << 5) | digit
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff)
      bits -= 8
    }
  }
  return Buffer.from(out)
}

/** DER prefixes of an ed25519 private key (PKCS#8, the 32-byte seed follows) and public key (SPKI). */
const PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex')

/** Public keys already turned into key objects (the few keys of a policy, checked over and over). */
const publicKeys = new Map<string, KeyObject>()
const MAX_KEYS = 1_000

/** The key object of a public nkey (`U...`): throws when it is not one (nkeys checks its prefix and checksum). */
function publicKeyObject(publicKey: string): KeyObject {
  const known = publicKeys.get(publicKey)
  if (known !== undefined) return known
  fromPublic(publicKey)
  // One prefix byte, the 32 key bytes, two checksum bytes.
  const raw = base32Decode(publicKey).subarray(1, 33)
  const key = createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' })
  if (publicKeys.size >= MAX_KEYS) publicKeys.delete(publicKeys.keys().next().value as string)
  publicKeys.set(publicKey, key)
  return key
}

/** Whether `signature` is `publicKey`'s over `data`; false for anything malformed. */
export function verifyEd25519(publicKey: string, data: Uint8Array, signature: Uint8Array): boolean {
  let key: KeyObject
  try {
    key = publicKeyObject(publicKey)
  } catch {
    return false
  }
  if (signature.length !== 64) return false
  return verify(null, data, key, signature)
}

/** Throws unless `publicKey` is a public nkey. */
export function assertPublicKey(publicKey: string): void {
  publicKeyObject(publicKey)
}

/** A signing function and the public key of an nkey seed (`SU...`); throws when it is not one. */
export function seedKey(seed: string): { publicKey: string; sign(data: Uint8Array): Uint8Array } {
  const publicKey = fromSeed(new TextEncoder().encode(seed)).getPublicKey()
  // Two prefix bytes, the 32 seed bytes, two checksum bytes.
  const raw = base32Decode(seed).subarray(2, 34)
  const key = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, raw]), format: 'der', type: 'pkcs8' })
  return { publicKey, sign: (data) => new Uint8Array(sign(null, data, key)) }
}
