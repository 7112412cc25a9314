/**
 * The trust policy file format (`signalbox run|host|review|console --trust`): what it accepts, how
 * it says what is wrong, and how `--agent-key` adds to a reviewer's policy file.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { agentKeysPolicy, createSigner, newUserSeed, parseTrustPolicy, TrustPolicyError } from '../../src/trust/index.ts'

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

describe('agentKeysPolicy with a policy file (review --trust FILE --agent-key UA...)', () => {
  it('adds the keys to the file’s agents for that scope and keeps everything else', () => {
    const other = createSigner(newUserSeed())
    const file = parseTrustPolicy(
      JSON.stringify({
        keys: { [tina.publicKey]: 'tina', [agent.publicKey]: 'claw' },
        answerers: [tina.publicKey],
        agents: { claw: [agent.publicKey] },
      }),
    )
    const merged = agentKeysPolicy([agent.publicKey, other.publicKey], 'claw', file)
    expect(merged.options).toEqual({
      keys: { [tina.publicKey]: 'tina', [agent.publicKey]: 'claw', [other.publicKey]: 'agent key 2' },
      answerers: [tina.publicKey],
      agents: { claw: [agent.publicKey, other.publicKey] },
    })
    const request = {
      v: 1,
      type: 'approval.request',
      agentId: 'claw',
      requestId: 'request_1',
      callId: 'call_1',
      toolName: 'pay',
      digest: `sha256:${'0'.repeat(64)}`,
      requestedAt: 1,
    }
    expect(merged.check(other.sign(request), { agentId: 'claw' })).toMatchObject({ ok: true, name: 'agent key 2' })
    // Without a file: the keys alone, for every agent.
    expect(agentKeysPolicy([other.publicKey]).options).toEqual({
      keys: { [other.publicKey]: 'agent key 1' },
      agents: { '*': [other.publicKey] },
    })
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
