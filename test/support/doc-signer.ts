/**
 * A signer written from docs/protocol.md §17 alone, without nkeys or signalbox code: base32-decode
 * the seed, take the 32 seed bytes, build the signed bytes with plain JSON (field lists read from
 * the doc's table), sign with node:crypto's ed25519. What a reviewer in another language does.
 */
import { createPrivateKey, sign } from 'node:crypto'
import { readFileSync } from 'node:fs'

const doc = readFileSync(new URL('../../docs/protocol.md', import.meta.url), 'utf8')
/** §17 of the protocol doc: the recipe, the field table and the test vectors. */
export const signingSection = doc.slice(doc.indexOf('## 17. Signing'))
/** The doc's published test seed and its public key. */
export const docSeed = /seed:\s+(S[A-Z0-9]+)/.exec(signingSection)?.[1] as string
export const docPublicKey = /public key:\s+(U[A-Z0-9]+)/.exec(signingSection)?.[1] as string

export function base32Decode(text: string): Buffer {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'
  let bits = 0
  let value = 0
  const out: number[] = []
  for (const char of text) {
    value = (value << 5) | alphabet.indexOf(char)
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 0xff)
      bits -= 8
    }
  }
  return Buffer.from(out)
}

/** The signed fields of a message type, as the doc's table lists them. */
export function docSignedFields(type: string): string[] | undefined {
  const row = new RegExp(`^\\| \`${type.replace('.', '\\.')}\` \\| (.+) \\|$`, 'm').exec(signingSection)?.[1]
  return row ? [...row.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1] as string) : undefined
}

/** The signature of `message` by `seed` (whose public key is `publicKey`), per §17.2. */
export function foreignSign(message: Record<string, unknown>, seed = docSeed, publicKey = docPublicKey): string {
  const fields = docSignedFields(String(message.type)) ?? []
  const body: Record<string, unknown> = { signer: publicKey }
  for (const field of fields) if (field in message) body[field] = message[field]
  const sorted = Object.fromEntries(
    Object.keys(body)
      .sort()
      .map((k) => [k, body[k]]),
  )
  const data = Buffer.from(`signalbox-signature-v1\n${JSON.stringify(sorted)}`, 'utf8')
  const raw = base32Decode(seed).subarray(2, 34)
  const key = createPrivateKey({
    key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), raw]),
    format: 'der',
    type: 'pkcs8',
  })
  return sign(null, data, key).toString('base64url')
}
