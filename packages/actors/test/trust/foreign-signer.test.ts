/**
 * A signer written from docs/protocol.md §17 alone, without nkeys or signalbox code: base32-decode
 * the seed, take the 32 seed bytes, build the signed bytes with plain JSON, sign with node:crypto's
 * ed25519. It must produce the doc's signatures, and what it signs must verify in signalbox.
 */
import { describe, expect, it } from 'vitest'
import {
  docSignedFields,
  foreignSign,
  docPublicKey as publicKey,
  signingSection as section,
} from '../../../../test/support/doc-signer.ts'
import { SIGNED_FIELDS, verifySignature } from '../../src/trust/index.ts'

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
      expect(docSignedFields(type), type).toEqual([...fields])
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
