/** The trust policy file format (`signalbox run|host --trust`): what it accepts, and how it says what is wrong. */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createSigner, newUserSeed, parseTrustPolicy, TrustPolicyError } from '../../src/trust/index.ts'

const tina = createSigner(newUserSeed())
const agent = createSigner(newUserSeed())
const decision = {
  v: 1,
  type: 'approval.decision',
  requestId: 'request_1',
  callId: 'call_1',
  digest: `sha256:${'0'.repeat(64)}`,
  approved: true,
  reviewer: 'whoever',
  decidedAt: 1,
}

describe('parseTrustPolicy', () => {
  it('reads the TrustPolicyOptions fields; the agent’s own key never approves, even when listed', () => {
    const policy = parseTrustPolicy(
      JSON.stringify({
        keys: { [tina.publicKey]: 'tina', [agent.publicKey]: 'the agent' },
        reviewers: { open_vault: [tina.publicKey, agent.publicKey] },
        answerers: [tina.publicKey],
        steerers: [],
        controllers: [],
        maxAgeMs: 60_000,
      }),
      { ownKey: agent.publicKey },
    )
    expect(policy.check(tina.sign(decision), { toolName: 'open_vault' })).toMatchObject({ ok: true, name: 'tina' })
    expect(policy.check(tina.sign(decision), { toolName: 'other' })).toMatchObject({ ok: false, code: 'key-not-allowed' })
    expect(policy.check(agent.sign(decision), { toolName: 'open_vault' })).toMatchObject({ ok: false, code: 'own-key' })
    expect(policy.options.maxAgeMs).toBe(60_000)
  })

  it.each([
    ['{ keys: tina }', /^not JSON/],
    ['[]', /^the document: /],
    [JSON.stringify({ reviewers: [] }), /^keys: /],
    [JSON.stringify({ keys: {}, reviewer: [] }), /^the document: unknown field "reviewer"/],
    [JSON.stringify({ keys: {}, ownKey: 'x' }), /unknown field "ownKey"/],
    [JSON.stringify({ keys: { 'not-a-key': 'tina' } }), /"not-a-key" is not a public nkey/],
    [JSON.stringify({ keys: { [tina.publicKey]: '' } }), /needs a name/],
    [JSON.stringify({ keys: {}, reviewers: [tina.publicKey] }), /reviewers lists U\w+, which has no name in keys/],
    [JSON.stringify({ keys: {}, reviewers: { open_vault: 'tina' } }), /^reviewers/],
    [JSON.stringify({ keys: {}, maxAgeMs: -1 }), /^maxAgeMs: /],
  ])('refuses %s', (text, message) => {
    let error: unknown
    try {
      parseTrustPolicy(text)
    } catch (thrown) {
      error = thrown
    }
    expect(error).toBeInstanceOf(TrustPolicyError)
    expect((error as TrustPolicyError).code).toBe('TRUST_POLICY_INVALID')
    expect((error as Error).message).toMatch(message)
  })
})

describe('docs/security.md', () => {
  it('the example policy file is one parseTrustPolicy accepts', () => {
    const doc = readFileSync(new URL('../../../../docs/security.md', import.meta.url), 'utf8')
    const section = doc.slice(doc.indexOf('## Trust policy files'))
    const example = /```json\n([\s\S]*?)```/.exec(section)?.[1]
    expect(example).toBeDefined()
    const policy = parseTrustPolicy((example as string).replace(/^ {2}/gm, ''))
    expect(Object.values(policy.options.keys)).toEqual(['tina', 'ops', 'travel host'])
  })
})
