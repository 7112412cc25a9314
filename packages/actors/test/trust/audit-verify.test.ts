/**
 * Offline audit verification: signed entries written through the real bus (JetStream) and read
 * back verify; an entry altered after signing, a forged entry and one whose evidence disagrees
 * are reported, each with its reason.
 */
import { createUser } from '@nats-io/nkeys'
import { busAuditLog, readAudit } from '@signalbox/actors'
import { provenActor } from '@signalbox/actors/internal'
import { connectNatsBus } from '@signalbox/actors/nats'
import { createSigner, createTrustPolicy, signAuditEntry, verifyAuditEntry, verifyAuditTrail } from '@signalbox/actors/trust'
import type { AuditEntry } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { rejectedDecisionAudit } from '@signalbox/core/internal'
import { callDigest } from '@signalbox/core/protocol'
import { afterAll, describe, expect, it } from 'vitest'
import { NATS_URL, uniquePrefix } from '../../../../test/support/env.ts'

const seed = () => new TextDecoder().decode(createUser().getSeed())
const agent = createSigner(seed())
const tina = createSigner(seed())

function grantedEntry(): AuditEntry {
  const digest = callDigest('drop_claw', { bin: 3 })
  const decision = tina.sign({
    v: 1,
    type: 'approval.decision',
    requestId: 'req-1',
    callId: 'call_1',
    digest,
    approved: true,
    reason: 'fine',
    reviewer: 'tina',
    decidedAt: 2_000,
  })
  return signAuditEntry(agent, {
    kind: 'approval.granted',
    agentId: 'claw',
    runId: 'run-1',
    runPath: ['run-1'],
    callId: 'call_1',
    toolName: 'drop_claw',
    shown: { bin: 3 },
    digest,
    decision: 'approved',
    reason: 'fine',
    actor: 'tina',
    requestedAt: 1_000,
    decidedAt: 2_000,
    latencyMs: 1_000,
    evidence: decision,
  })
}

function timeoutEntry(): AuditEntry {
  return signAuditEntry(agent, {
    kind: 'approval.timeout',
    agentId: 'claw',
    runId: 'run-1',
    runPath: ['run-1'],
    callId: 'call_2',
    toolName: 'drop_claw',
    decision: 'timeout',
    actor: 'system',
    decidedAt: 3_000,
  })
}

describe('verifyAuditEntry', () => {
  it('a signed entry with matching signed evidence verifies', () => {
    expect(verifyAuditEntry(grantedEntry())).toEqual([])
    expect(verifyAuditEntry(timeoutEntry())).toEqual([])
  })

  it('detects an entry altered after signing', () => {
    const tampered = { ...grantedEntry(), shown: { bin: 99 } }
    expect(verifyAuditEntry(tampered).map((p) => p.code)).toEqual(['bad-signature'])
  })

  it('detects a forged entry: unsigned, or re-signed by another key with evidence that does not match', () => {
    const { signer: _s, signature: _sig, ...unsigned } = grantedEntry()
    expect(verifyAuditEntry(unsigned).map((p) => p.code)).toEqual(['unsigned'])
    const mallory = createSigner(seed())
    const forged = signAuditEntry(mallory, {
      ...unsigned,
      kind: 'approval.granted',
      reason: 'looks fine to me',
      shown: { amount: 1_000_000 },
    })
    const problems = verifyAuditEntry(forged, { writers: [agent.publicKey] })
    expect(problems.map((p) => p.code)).toEqual(['unknown-writer', 'evidence-mismatch'])
    expect(problems[1]?.reason).toContain('reason')
  })

  it('detects a denial turned into a grant, and a decided entry without evidence', () => {
    const entry = grantedEntry()
    const evidence = { ...(entry.evidence as Record<string, unknown>), approved: false }
    expect(verifyAuditEntry(signAuditEntry(agent, { ...entry, evidence })).map((p) => p.code)).toEqual(['evidence-invalid'])
    const { evidence: _e, ...bare } = entry
    expect(verifyAuditEntry(signAuditEntry(agent, bare)).map((p) => p.code)).toEqual(['evidence-invalid'])
  })

  it('flags evidence that is null or not an object (a tampered entry), never throws', () => {
    const entry = grantedEntry()
    for (const evidence of [null, 'approved', 7]) {
      const tampered = { ...entry, evidence } as unknown as AuditEntry
      expect(verifyAuditEntry(tampered).map((p) => p.code)).toEqual(['bad-signature', 'evidence-invalid'])
      expect(verifyAuditEntry(signAuditEntry(agent, tampered)).map((p) => p.code)).toEqual(['evidence-invalid'])
    }
  })

  it('with a policy, names the decider from the key and checks the key may decide the tool', () => {
    const policy = createTrustPolicy({ keys: { [tina.publicKey]: 'tina' }, reviewers: { other_tool: [tina.publicKey] } })
    const codes = verifyAuditEntry(grantedEntry(), { policy }).map((p) => p.code)
    expect(codes).toEqual(['evidence-not-trusted'])
    const allowed = createTrustPolicy({ keys: { [tina.publicKey]: 'tina' }, reviewers: [tina.publicKey] })
    expect(verifyAuditEntry(grantedEntry(), { policy: allowed })).toEqual([])
    expect(verifyAuditEntry(signAuditEntry(agent, { ...grantedEntry(), actor: 'cfo' }), { policy: allowed })[0]?.code).toBe(
      'evidence-mismatch',
    )
  })
})

describe('refused decisions: recorded as they came, audited under who provably sent them', () => {
  const mallory = createSigner(seed())
  const policy = createTrustPolicy({
    keys: { [tina.publicKey]: 'tina', [mallory.publicKey]: 'mallory' },
    reviewers: [tina.publicKey],
  })
  const digest = callDigest('drop_claw', { bin: 3 })
  const request = {
    requestId: 'req-1',
    agentId: 'claw',
    runId: 'run-1',
    runPath: ['run-1'],
    callId: 'call_1',
    toolName: 'drop_claw',
    arguments: { bin: 3 },
    digest,
    deadline: 9_000,
    requestedAt: 1_000,
  }
  const claimTina = {
    v: 1,
    type: 'approval.decision',
    requestId: 'req-1',
    callId: 'call_1',
    digest,
    approved: true,
    reviewer: 'tina',
    decidedAt: 2_000,
  }
  const refused = (decision: unknown, reason: string, actor = provenActor(policy, decision)) =>
    signAuditEntry(agent, rejectedDecisionAudit({ run: request, request, decision, reason, at: 2_500, actor }))

  it('a refusal of a forged, an unsigned and a badly signed decision verifies; the trail names mallory, never tina', () => {
    const signedByMallory = refused(mallory.sign(claimTina), 'key-not-allowed')
    const unsigned = refused(claimTina, 'unsigned')
    const badlySigned = refused({ ...mallory.sign(claimTina), approved: false }, 'bad-signature')
    expect([signedByMallory, unsigned, badlySigned].map((e) => [e.actor, e.claimed])).toEqual([
      ['mallory', 'tina'],
      ['unverified', 'tina'],
      ['unverified', 'tina'],
    ])
    const report = verifyAuditTrail([signedByMallory, unsigned, badlySigned, grantedEntry()], {
      writers: { [agent.publicKey]: 'claw agent' },
      policy: createTrustPolicy({ ...policy.options, reviewers: { drop_claw: [tina.publicKey] } }),
    })
    expect(report.failures).toEqual([])
    expect(report.entries.map((e) => [e.writer?.name, e.evidence?.name ?? e.evidence?.key])).toEqual([
      ['claw agent', 'mallory'],
      ['claw agent', undefined],
      ['claw agent', undefined],
      ['claw agent', 'tina'],
    ])
  })

  it('a refusal that blames the name the forgery claimed, or misstates what it said, is flagged', () => {
    const blamesTina = refused(mallory.sign(claimTina), 'key-not-allowed', 'tina')
    expect(verifyAuditEntry(blamesTina, { writers: [agent.publicKey], policy }).map((p) => p.reason)).toEqual([
      'the entry disagrees with the message it refused on actor',
    ])
    const misstated = signAuditEntry(agent, { ...refused(mallory.sign(claimTina), 'key-not-allowed'), decision: 'denied' })
    expect(verifyAuditEntry(misstated, { policy })[0]?.reason).toMatch(/on decision$/)
  })

  it('a grant signed by a fresh key, with evidence signed by another fresh key, fails when the writers are known', () => {
    const fresh = createSigner(seed())
    const freshReviewer = createSigner(seed())
    const selfSigned = signAuditEntry(fresh, {
      ...grantedEntry(),
      evidence: freshReviewer.sign({ ...claimTina, reason: 'fine' }),
    })
    expect(verifyAuditEntry(selfSigned, { writers: [agent.publicKey], policy }).map((p) => p.code)).toEqual([
      'unknown-writer',
      'evidence-not-trusted',
    ])
  })
})

describe('audit trail over NATS', () => {
  const prefix = uniquePrefix()
  const subjects = createSubjects(prefix)
  const opened: { close(): Promise<void> }[] = []
  afterAll(async () => {
    for (const bus of opened) await bus.close()
  })

  it('signed entries survive the bus; a tampered entry published next to them is reported', async () => {
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'audit-verify-test' })
    opened.push(bus)
    try {
      const log = busAuditLog({ bus, subjects })
      await log.record(grantedEntry())
      await log.record(timeoutEntry())
      // An attacker with publish rights on the audit subjects writes a "grant" of its own.
      const forged = { ...grantedEntry(), toolName: 'wire_money', shown: { amount: 1_000_000 }, actor: 'cfo' }
      await bus.durablePublish(
        subjects.audit('claw', 'approval.granted'),
        JSON.stringify({ v: 1, type: 'audit', entry: forged }),
        {
          msgId: 'forged-1',
        },
      )
      const entries = await readAudit({ bus, subjects })
      expect(entries).toHaveLength(3)
      const report = verifyAuditTrail(entries, { writers: [agent.publicKey] })
      expect(report.checked).toBe(3)
      expect(report.failures).toHaveLength(1)
      expect(report.failures[0]?.entry.toolName).toBe('wire_money')
      expect(report.failures[0]?.problems.map((p) => p.code)).toEqual(['bad-signature'])
    } finally {
      await bus.request(`$JS.API.STREAM.DELETE.${bus.streamName}`, '', { timeoutMs: 3_000 }).catch(() => {})
    }
  })
})
