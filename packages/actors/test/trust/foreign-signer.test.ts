/**
 * A signer written from docs/protocol.md §19 alone, without nkeys or signalbox code: base32-decode
 * the seed, take the 32 seed bytes, build the signed bytes with plain JSON, sign with node:crypto's
 * ed25519. It must produce the doc's signatures, and what it signs must verify in signalbox.
 */
import { createPrivateKey, sign } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { SIGNED_FIELDS, verifySignature } from '../../src/trust/index.ts'

const doc = readFileSync(new URL('../../../../docs/protocol.md', import.meta.url), 'utf8')
const section = doc.slice(doc.indexOf('## 19. Signing'))
const seed = /seed:\s+(S[A-Z0-9]+)/.exec(section)?.[1] as string
const publicKey = /public key:\s+(U[A-Z0-9]+)/.exec(section)?.[1] as string

function base32Decode(text: string): Buffer {
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

/** What the doc says a foreign reviewer does; the field lists are read from the doc's table. */
function foreignSign(message: Record<string, unknown>): string {
  const row = new RegExp(`^\\| \`${String(message.type).replace('.', '\\.')}\` \\| (.+) \\|$`, 'm').exec(section)?.[1] as string
  const fields = [...row.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1] as string)
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

describe('a signer written from the doc alone', () => {
  const messages = [...section.matchAll(/```json signed-message\n([^`]+)```/g)].map(
    (m) => JSON.parse(m[1] as string) as Record<string, unknown>,
  )

  it('reproduces every signature of the doc, with field lists that match the code', () => {
    expect(messages.length).toBeGreaterThanOrEqual(2)
    for (const message of messages) {
      const { signature, signer: _signer, ...fields } = message
      expect(foreignSign(fields)).toBe(signature)
    }
    // The doc's table and the code's lists are the same lists.
    for (const [type, fields] of Object.entries(SIGNED_FIELDS)) {
      const row = new RegExp(`^\\| \`${type.replace('.', '\\.')}\` \\| (.+) \\|$`, 'm').exec(section)?.[1]
      expect(row && [...row.matchAll(/`([A-Za-z]+)`/g)].map((m) => m[1]), type).toEqual([...fields])
    }
  })

  it('signs a new decision that signalbox accepts', () => {
    const decision = {
      v: 1,
      type: 'approval.decision',
      requestId: 'req-foreign',
      callId: 'call_9',
      digest: `sha256:${'0'.repeat(64)}`,
      approved: false,
      reason: 'nope — «not today»\n',
      reviewer: 'python',
      decidedAt: 1_767_225_699_000,
    }
    const signed = { ...decision, signer: publicKey, signature: foreignSign(decision) }
    expect(verifySignature(signed)).toEqual({ ok: true, signer: publicKey })
  })
})
