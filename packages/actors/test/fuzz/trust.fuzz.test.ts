/**
 * The trust functions against random and hostile input (fast-check): canonical encoding,
 * signature checks, the trust policy and audit verification never throw on what a peer can
 * send, and nothing but the exact signed message by an allowed key is ever accepted.
 */
import type { AuditEntry } from '@signalbox/core'
import { callDigest, canonicalJson } from '@signalbox/core/protocol'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { encodingProblem } from '../../src/trust/canonical.ts'
import {
  createSigner,
  createTrustPolicy,
  newUserSeed,
  SIGNED_FIELDS,
  type Signed,
  signAuditEntry,
  signingInput,
  verifyAuditEntry,
  verifySignature,
} from '../../src/trust/index.ts'

const TINA = createSigner('SUAGTWX75A3YDLUITP2S4DSAWVZUEG4OUNFE6FHIFCDOIQNFOGKG2NILOQ')
const AGENT = createSigner(newUserSeed())
const policy = createTrustPolicy({
  keys: { [TINA.publicKey]: 'tina', [AGENT.publicKey]: 'claw' },
  reviewers: { drop_claw: [TINA.publicKey] },
  steerers: [TINA.publicKey],
  controllers: [TINA.publicKey],
  answerers: [TINA.publicKey],
  ownKey: AGENT.publicKey,
  agents: { claw: [AGENT.publicKey] },
})

const decision = {
  v: 1,
  type: 'approval.decision',
  requestId: 'req-1',
  callId: 'call_1',
  digest: callDigest('drop_claw', { bin: 3 }),
  approved: true,
  reason: 'bin 3 is empty',
  reviewer: 'tina',
  decidedAt: 1_767_225_600_000,
}
const signedDecision = TINA.sign(decision)

/** Anything a hostile peer can put in a decoded JSON message, including values JSON cannot carry. */
const hostileValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(undefined, Number.NaN, Number.POSITIVE_INFINITY, -0, 2 ** 60, '\ud800', 'a\u0000b'),
  fc.string({ unit: 'binary', maxLength: 20 }),
)
const hostileMessage = fc.dictionary(
  fc.oneof(
    fc.constantFrom('v', 'type', 'signer', 'signature', 'agentId', 'toolName', 'sentAt', ...SIGNED_FIELDS['approval.decision']),
    fc.string({ maxLength: 8 }),
  ),
  hostileValue,
  { maxKeys: 12 },
)
/**
 * Whether a drawn value says the same as the signed one: a fresh `[]` for `runPath: []` is the
 * same content, not a tampering (structures compare by their canonical JSON, scalars exactly,
 * so `-0`, `NaN` and friends still count as changes).
 */
function sameContent(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true
  return typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && canonicalJson(a) === canonicalJson(b)
}
const signableType = fc.constantFrom(...(Object.keys(SIGNED_FIELDS) as (keyof typeof SIGNED_FIELDS)[]))

describe('trust functions under fuzzing', () => {
  it('random messages: verifySignature, policy.check and encodingProblem never throw, and never accept', () => {
    fc.assert(
      fc.property(hostileMessage, signableType, fc.string({ maxLength: 20 }), (message, type, tool) => {
        const m: Signed = { type, ...message }
        const problem = encodingProblem(m)
        expect(problem === undefined || typeof problem === 'string').toBe(true)
        expect(verifySignature(m).ok).toBe(false)
        expect(policy.check(m, { toolName: tool, agentId: 'claw', now: 0 }).ok).toBe(false)
      }),
      { numRuns: 400 },
    )
  })

  it('signingInput either encodes or throws a TypeError naming the problem', () => {
    fc.assert(
      fc.property(hostileMessage, signableType, (message, type) => {
        try {
          const bytes = signingInput({ v: 1, type, ...message }, TINA.publicKey)
          expect(bytes.byteLength).toBeGreaterThan(0)
        } catch (error) {
          expect(error).toBeInstanceOf(TypeError)
        }
      }),
      { numRuns: 300 },
    )
  })

  it('a signed decision with any signed field, signer or signature changed is never accepted', () => {
    const fields = ['signer', 'signature', ...SIGNED_FIELDS['approval.decision']]
    fc.assert(
      fc.property(fc.constantFrom(...fields), hostileValue, (field, value) => {
        fc.pre(!sameContent((signedDecision as Record<string, unknown>)[field], value))
        const forged = { ...signedDecision, [field]: value }
        expect(verifySignature(forged).ok).toBe(false)
        expect(policy.check(forged, { toolName: 'drop_claw' }).ok).toBe(false)
      }),
      // An ed25519 check costs milliseconds in JavaScript: few runs, every field still drawn.
      { numRuns: 40 },
    )
    // Unsigned members (edited arguments are checked by the agent, not the signature) may change.
    expect(policy.check({ ...signedDecision, extra: 1 }, { toolName: 'drop_claw' })).toMatchObject({ ok: true, name: 'tina' })
  })

  it('the right signature is accepted only for the tool and roles the key is allowed', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 20 }), (tool) => {
        const verdict = policy.check(signedDecision, { toolName: tool })
        expect(verdict.ok).toBe(tool === 'drop_claw')
      }),
      { numRuns: 15, examples: [['drop_claw'], ['drop_claw ']] },
    )
    // The agent's own key never decides its own calls, even correctly signed.
    expect(policy.check(AGENT.sign(decision), { toolName: 'drop_claw' })).toMatchObject({ ok: false, code: 'own-key' })
  })

  it('audit verification: random and tampered entries are flagged, never a crash', () => {
    const entry: AuditEntry = {
      kind: 'approval.granted',
      agentId: 'claw',
      runId: 'run_1',
      runPath: [],
      callId: 'call_1',
      toolName: 'drop_claw',
      shown: { bin: 3 },
      digest: decision.digest,
      decision: 'approved',
      reason: decision.reason,
      actor: 'tina',
      requestedAt: 1_767_225_590_000,
      decidedAt: decision.decidedAt,
      evidence: signedDecision,
    }
    const signed = signAuditEntry(AGENT, entry)
    expect(verifyAuditEntry(signed, { writers: [AGENT.publicKey], policy })).toEqual([])
    // The same content in fresh objects is the honest entry, not a tampering.
    expect(verifyAuditEntry({ ...signed, runPath: [], shown: { bin: 3 } }, { writers: [AGENT.publicKey], policy })).toEqual([])
    fc.assert(
      fc.property(fc.constantFrom(...Object.keys(signed)), hostileValue, (field, value) => {
        fc.pre(!sameContent((signed as unknown as Record<string, unknown>)[field], value) && value !== undefined)
        const tampered = { ...signed, [field]: value } as unknown as AuditEntry
        expect(verifyAuditEntry(tampered, { writers: [AGENT.publicKey], policy }).length).toBeGreaterThan(0)
      }),
      {
        numRuns: 10,
        examples: [
          ['runPath', []],
          ['runPath', ['parent']],
          ['shown', { bin: 4 }],
        ],
      },
    )
    fc.assert(
      fc.property(hostileMessage, (random) => {
        const problems = verifyAuditEntry(random as unknown as AuditEntry, { policy })
        expect(problems.length).toBeGreaterThan(0)
      }),
      { numRuns: 30 },
    )
  })
})
