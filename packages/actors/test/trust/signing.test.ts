import { readFileSync } from 'node:fs'
import { createUser } from '@nats-io/nkeys'
import { whyNotAcceptable } from '@signalbox/actors/internal'
import { createSigner, createTrustPolicy, SigningKeyError, signingInput, verifySignature } from '@signalbox/actors/trust'
import { callDigest } from '@signalbox/core/protocol'
import { describe, expect, it } from 'vitest'

const TEST_SEED = 'SUAGTWX75A3YDLUITP2S4DSAWVZUEG4OUNFE6FHIFCDOIQNFOGKG2NILOQ'
const TEST_KEY = 'UAOH7E4WKCE7U3IGSASXSIZ5PYAGU2Y63NADCGLWL7VK326AY4DI7OSB'
const seedOf = () => new TextDecoder().decode(createUser().getSeed())

const decision = (over: Record<string, unknown> = {}) => ({
  v: 1,
  type: 'approval.decision',
  requestId: 'req-7f3a',
  callId: 'call_1',
  digest: callDigest('drop_claw', { bin: 3 }),
  approved: true,
  reason: 'ok, bin 3 is empty',
  reviewer: 'tina',
  decidedAt: 1767225600000,
  ...over,
})

describe('signing', () => {
  it('reproduces the fixed test vector (ed25519 is deterministic)', () => {
    const signer = createSigner(TEST_SEED)
    expect(signer.publicKey).toBe(TEST_KEY)
    const signed = signer.sign(decision())
    expect(signed.signature).toBe('EgQu2XagFgxXvpQUs7VY05uOdKLs_HFvsfOAzoHPemdvY4CXGk3zJ698kiczRBNk-6uy94Z-hYULcikRxhHfDg')
    expect(verifySignature(signed)).toEqual({ ok: true, signer: TEST_KEY })
  })

  it('covers every signed field: changing any one breaks the signature', () => {
    const signed = createSigner(seedOf()).sign(decision())
    const changes: Record<string, unknown> = {
      requestId: 'req-other',
      callId: 'call_2',
      digest: callDigest('drop_claw', { bin: 4 }),
      approved: false,
      reason: 'changed',
      reviewer: 'mallory',
      decidedAt: 1767225600001,
      v: 2,
    }
    for (const [field, value] of Object.entries(changes)) {
      const check = verifySignature({ ...signed, [field]: value })
      expect(check.ok, field).toBe(false)
    }
    const { reason: _reason, ...withoutReason } = signed
    expect(verifySignature(withoutReason)).toMatchObject({ ok: false, code: 'bad-signature' })
    // A field outside the list (transport detail) does not matter.
    expect(verifySignature({ ...signed, extra: 'x' }).ok).toBe(true)
  })

  it('names what is wrong: unsigned, malformed, bad signature, another key', () => {
    const signed = createSigner(seedOf()).sign(decision())
    expect(verifySignature(decision())).toMatchObject({ ok: false, code: 'unsigned' })
    expect(verifySignature({ ...signed, signer: 'not-a-key' })).toMatchObject({ ok: false, code: 'malformed' })
    expect(verifySignature({ ...signed, signature: 'short' })).toMatchObject({ ok: false, code: 'malformed' })
    expect(verifySignature({ ...signed, signer: createUser().getPublicKey() })).toMatchObject({
      ok: false,
      code: 'bad-signature',
    })
    expect(verifySignature({ ...signed, decidedAt: 1.5 })).toMatchObject({ ok: false, code: 'malformed' })
    expect(verifySignature({ ...signed, type: 'tool.result' })).toMatchObject({ ok: false, code: 'malformed' })
  })

  it('refuses a bad seed without quoting it', () => {
    const bad = 'SUAXXXXsecretXXXX'
    let error: unknown
    try {
      createSigner(bad)
    } catch (e) {
      error = e
    }
    expect(error).toBeInstanceOf(SigningKeyError)
    expect((error as SigningKeyError).code).toBe('SIGNING_KEY_INVALID')
    expect(String((error as Error).message)).not.toContain('secret')
  })

  it('escapes strings like JSON and keeps non-ASCII as is', () => {
    const text = new TextDecoder().decode(
      signingInput({ v: 1, type: 'steer', agentId: 'a', steerId: 's', text: 'é "q"\n\u0001', from: 'x', sentAt: 1 }, TEST_KEY),
    )
    expect(text).toContain('"text":"é \\"q\\"\\n\\u0001"')
    expect(() => signingInput({ ...decision(), reason: '\ud800' }, TEST_KEY)).toThrow(/Unicode/)
  })
})

describe('docs/protocol.md §17 test vectors', () => {
  const doc = readFileSync(new URL('../../../../docs/protocol.md', import.meta.url), 'utf8')
  const blocks = (tag: string) =>
    [...doc.matchAll(new RegExp(`\`\`\`json ${tag}\\n([^\`]+)\`\`\``, 'g'))].map((m) => JSON.parse(m[1] as string))

  it('every signed message in the doc verifies, with the bytes the doc shows', () => {
    const inputs = blocks('signing-input') as string[]
    const messages = blocks('signed-message') as Record<string, unknown>[]
    expect(messages.length).toBeGreaterThanOrEqual(2)
    expect(inputs.length).toBe(messages.length)
    expect(doc).toContain(`seed:       ${TEST_SEED}`)
    messages.forEach((message, i) => {
      expect(verifySignature(message)).toEqual({ ok: true, signer: TEST_KEY })
      expect(new TextDecoder().decode(signingInput(message, TEST_KEY))).toBe(inputs[i])
      const { signer: _signer, signature, ...fields } = message
      expect(createSigner(TEST_SEED).sign(fields).signature).toBe(signature)
    })
  })
})

describe('trust policy', () => {
  const tina = createSigner(seedOf())
  const bob = createSigner(seedOf())
  const agent = createSigner(seedOf())
  const stranger = createSigner(seedOf())
  const policy = createTrustPolicy({
    keys: { [tina.publicKey]: 'tina', [bob.publicKey]: 'bob', [agent.publicKey]: 'claw agent' },
    reviewers: { '*': [tina.publicKey, bob.publicKey, agent.publicKey], drop_claw: [tina.publicKey, agent.publicKey] },
    steerers: [tina.publicKey],
    controllers: [bob.publicKey],
    ownKey: agent.publicKey,
    agents: { claw: [agent.publicKey] },
  })

  it('accepts an allowed key and names it from the policy, not from the message', () => {
    expect(policy.check(tina.sign(decision({ reviewer: 'cfo' })), { toolName: 'drop_claw' })).toEqual({
      ok: true,
      signer: tina.publicKey,
      name: 'tina',
    })
    expect(policy.check(bob.sign(decision()), { toolName: 'move_claw' })).toMatchObject({ ok: true, name: 'bob' })
  })

  it('says why a decision is not acceptable', () => {
    const ctx = { toolName: 'drop_claw' }
    expect(whyNotAcceptable(policy, decision(), ctx)?.code).toBe('unsigned')
    expect(whyNotAcceptable(policy, { ...tina.sign(decision()), approved: false }, ctx)?.code).toBe('bad-signature')
    expect(whyNotAcceptable(policy, stranger.sign(decision()), ctx)?.code).toBe('unknown-key')
    const notAllowed = whyNotAcceptable(policy, bob.sign(decision()), ctx)
    expect(notAllowed).toEqual({ code: 'key-not-allowed', reason: expect.stringContaining('bob') })
    expect(notAllowed?.reason).toContain('drop_claw')
    // Listed for the tool, but it is the agent itself.
    expect(whyNotAcceptable(policy, agent.sign(decision()), ctx)?.code).toBe('own-key')
    expect(whyNotAcceptable(policy, tina.sign(decision()), ctx)).toBeUndefined()
  })

  it('checks steering and cancels against the receiving agent and its allow-lists', () => {
    const steer = { v: 1, type: 'steer', agentId: 'claw', steerId: 's1', text: 'stop', from: 'tina', sentAt: 1 }
    expect(policy.check(tina.sign(steer), { agentId: 'claw' }).ok).toBe(true)
    expect(policy.check(tina.sign(steer), { agentId: 'other' })).toMatchObject({ ok: false, code: 'wrong-agent' })
    expect(policy.check(bob.sign(steer), { agentId: 'claw' })).toMatchObject({ ok: false, code: 'key-not-allowed' })
    const cancel = { v: 1, type: 'control.cancel', agentId: 'claw', from: 'bob', sentAt: 2 }
    expect(policy.check(bob.sign(cancel), { agentId: 'claw' }).ok).toBe(true)
    expect(policy.check(tina.sign(cancel), { agentId: 'claw' })).toMatchObject({ ok: false, code: 'key-not-allowed' })
  })

  it('with maxAgeMs, refuses steering sent too long ago (a replayed capture)', () => {
    const fresh = createTrustPolicy({ ...policy.options, maxAgeMs: 60_000 })
    const steer = tina.sign({
      v: 1,
      type: 'steer',
      agentId: 'claw',
      steerId: 's1',
      text: 'stop',
      from: 'tina',
      sentAt: 1_000_000,
    })
    expect(fresh.check(steer, { agentId: 'claw', now: 1_030_000 }).ok).toBe(true)
    expect(fresh.check(steer, { agentId: 'claw', now: 1_000_000 + 3_600_000 })).toMatchObject({ ok: false, code: 'stale' })
  })

  it('lets a reviewer tell an agent-signed request from a fake', () => {
    const request = {
      v: 1,
      type: 'approval.request',
      requestId: 'r1',
      agentId: 'claw',
      runId: 'run-1',
      callId: 'c1',
      toolName: 'drop_claw',
      digest: callDigest('drop_claw', { bin: 1 }),
      deadline: 10,
      requestedAt: 1,
    }
    expect(policy.check(agent.sign(request), { agentId: 'claw' })).toMatchObject({ ok: true, name: 'claw agent' })
    expect(policy.check(tina.sign(request))).toMatchObject({ ok: false, code: 'key-not-allowed' })
    expect(policy.check(request)).toMatchObject({ ok: false, code: 'unsigned' })
    expect(policy.check(agent.sign({ ...request, agentId: 'other' }), { agentId: 'claw' })).toMatchObject({ code: 'wrong-agent' })
  })

  it('refuses a policy that lists an unnamed or invalid key', () => {
    expect(() => createTrustPolicy({ keys: {}, reviewers: [tina.publicKey] })).toThrow(/no name/)
    expect(() => createTrustPolicy({ keys: { nope: 'x' } })).toThrow(/not a public nkey/)
  })
})
