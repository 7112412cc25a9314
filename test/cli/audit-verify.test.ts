/**
 * `signalbox audit --verify`, pinned to known keys: an honest trail (a grant, and decisions the
 * agent refused, as it records them) verifies, each entry naming the keys that signed it; a grant
 * forged with fresh keys (entry and evidence) fails; a tampered entry fails; no key is a usage error.
 */
import { writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { busAuditLog } from '@signalbox/actors'
import { provenActor } from '@signalbox/actors/internal'
import { connectNatsBus } from '@signalbox/actors/nats'
import {
  createSigner,
  createTrustPolicy,
  newUserSeed,
  type Signer,
  signAuditEntry,
  signedAuditLog,
} from '@signalbox/actors/trust'
import type { AuditEntry } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { rejectedDecisionAudit } from '@signalbox/core/internal'
import { callDigest } from '@signalbox/core/protocol'
import { afterAll, describe, expect, it } from 'vitest'
import { uniquePrefix } from '../support/env.ts'
import { busArgs, cleanupAll, deleteStream, NATS_URL, runCli } from './support.ts'

const agent = createSigner(newUserSeed())
const tina = createSigner(newUserSeed())
const mallory = createSigner(newUserSeed())
const keys = { [tina.publicKey]: 'tina', [mallory.publicKey]: 'mallory' }
const policy = createTrustPolicy({ keys, reviewers: { drop_claw: [tina.publicKey] } })
const digest = callDigest('drop_claw', { bin: 3 })
const request = {
  requestId: 'req-1',
  agentId: 'claw',
  runId: 'run-1',
  runPath: [],
  callId: 'call_1',
  toolName: 'drop_claw',
  arguments: { bin: 3 },
  digest,
  deadline: 1_767_225_900_000,
  requestedAt: 1_767_225_600_000,
}
const decision = (signer: Signer | undefined, approved: boolean, decidedAt: number) => {
  const unsigned = {
    v: 1 as const,
    type: 'approval.decision' as const,
    requestId: 'req-1',
    callId: 'call_1',
    digest,
    approved,
    reviewer: 'tina',
    decidedAt,
  }
  return signer ? signer.sign(unsigned) : unsigned
}
const granted = (signer: Signer, evidence: Record<string, unknown>): AuditEntry =>
  signAuditEntry(signer, {
    kind: 'approval.granted',
    agentId: 'claw',
    runId: 'run-1',
    runPath: [],
    callId: 'call_1',
    toolName: 'drop_claw',
    shown: { bin: 3 },
    digest,
    decision: 'approved',
    actor: 'tina',
    requestedAt: 1_767_225_600_000,
    decidedAt: evidence.decidedAt as number,
    evidence,
  })

describe('signalbox audit --verify', () => {
  const prefix = uniquePrefix()
  let dir: string | undefined
  afterAll(async () => {
    await cleanupAll()
    await deleteStream(prefix)
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('verifies an honest trail with refused forgeries, names each entry’s keys, and fails a grant forged with fresh keys', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-audit-verify-'))
    const policyFile = path.join(dir, 'policy.json')
    writeFileSync(policyFile, JSON.stringify({ keys, reviewers: { drop_claw: [tina.publicKey] } }))
    const subjects = createSubjects(prefix)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'audit-verify-cli-test' })
    try {
      // What the agent writes: its refusals (as the remote reviewer hands them over), then the grant.
      const log = signedAuditLog({ log: busAuditLog({ bus, subjects }), signer: agent })
      const refuse = (forged: unknown, reason: string, at: number) =>
        log.record(
          rejectedDecisionAudit({ run: request, request, decision: forged, reason, at, actor: provenActor(policy, forged) }),
        )
      await refuse(decision(mallory, true, 1_767_225_601_000), 'key-not-allowed: mallory may not approve', 1_767_225_601_000)
      await refuse(decision(undefined, true, 1_767_225_602_000), 'unsigned: the message is not signed', 1_767_225_602_000)
      // Signed by mallory, then altered: its signature no longer verifies, which is why it was refused.
      const altered = { ...decision(mallory, false, 1_767_225_603_000), approved: true }
      await refuse(altered, 'bad-signature: the signature does not verify', 1_767_225_603_000)
      await log.record(granted(agent, decision(tina, true, 1_767_225_604_000)))

      const verify = ['audit', '--verify', '--trust', policyFile, '--agent-key', agent.publicKey, ...busArgs(prefix)]
      const clean = await runCli(verify)
      expect(clean.stdout).toContain('4 entries checked, 0 do not verify')
      expect(clean.code).toBe(0)
      const lines = clean.stdout.split('\n').filter((line) => /^ok #/.test(line))
      expect(lines).toHaveLength(4)
      // Each refusal is audited under who provably sent it; the name it claimed is kept.
      expect(lines[0]).toMatch(/approval\.rejected drop_claw by mallory \(claimed tina\)/)
      expect(lines[0]).toContain(`records a message signed by ${mallory.publicKey} (mallory)`)
      expect(lines[1]).toMatch(/approval\.rejected drop_claw by unverified \(claimed tina\)/)
      expect(lines[2]).toMatch(/by unverified \(claimed tina\): .*records a message with no valid signature/)
      expect(lines[3]).toMatch(/approval\.granted drop_claw by tina: /)
      expect(lines[3]).toContain(`entry signed by ${agent.publicKey} (agent key 1)`)
      expect(lines[3]).toContain(`records a message signed by ${tina.publicKey} (tina)`)

      // A superuser writes a grant: entry and evidence signed by fresh keys, the evidence naming tina.
      const freshWriter = createSigner(newUserSeed())
      const freshReviewer = createSigner(newUserSeed())
      const forged = granted(freshWriter, decision(freshReviewer, true, 1_767_225_605_000))
      await bus.durablePublish(
        subjects.audit('claw', 'approval.granted'),
        JSON.stringify({ v: 1, type: 'audit', entry: forged }),
        {
          msgId: 'forged-grant',
        },
      )
      // And an honest entry altered after signing.
      const tampered = { ...granted(agent, decision(tina, true, 1_767_225_606_000)), shown: { bin: 9 } }
      await bus.durablePublish(
        subjects.audit('claw', 'approval.granted'),
        JSON.stringify({ v: 1, type: 'audit', entry: tampered }),
        {
          msgId: 'tampered-grant',
        },
      )
      const flagged = await runCli(verify)
      expect(flagged.code).toBe(1)
      expect(flagged.stdout).toContain('6 entries checked, 2 do not verify')
      expect(flagged.stdout).toMatch(/FAIL #5 .*approval\.granted drop_claw by tina: entry signed by \w+ \(not in the policy\)/)
      expect(flagged.stdout).toMatch(/unknown-writer .*\n?.*evidence-not-trusted \(signed by an unknown key/)
      expect(flagged.stdout).toMatch(/FAIL #6 .*\n\s+bad-signature/)
      expect(flagged.stdout.match(/^FAIL/gm)).toHaveLength(2)

      // Unpinned, a verifier would accept any key: refused before connecting.
      const unpinned = await runCli(['audit', '--verify', ...busArgs(prefix)])
      expect(unpinned.code).toBe(2)
      expect(unpinned.stderr).toMatch(/--verify needs the agents' public keys.*--agent-key/)
    } finally {
      await bus.close()
    }
  })
})
