/** `signalbox audit --verify`: checks every stored entry's signatures offline, flags a tampered one. */
import { busAuditLog } from '@signalbox/actors'
import { connectNatsBus } from '@signalbox/actors/nats'
import { createSigner, newUserSeed, signAuditEntry } from '@signalbox/actors/trust'
import type { AuditEntry } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { afterAll, describe, expect, it } from 'vitest'
import { uniquePrefix } from '../support/env.ts'
import { busArgs, cleanupAll, deleteStream, NATS_URL, runCli } from './support.ts'

const agent = createSigner(newUserSeed())
const entry = (callId: string, decidedAt: number): AuditEntry =>
  signAuditEntry(agent, {
    kind: 'approval.timeout',
    agentId: 'claw',
    runId: 'run-1',
    runPath: ['run-1'],
    callId,
    toolName: 'drop_claw',
    decision: 'timeout',
    actor: 'system',
    decidedAt,
  })

describe('signalbox audit --verify', () => {
  const prefix = uniquePrefix()
  afterAll(async () => {
    await cleanupAll()
    await deleteStream(prefix)
  })

  it('exits 0 when every entry verifies, 1 and names the entry once one was tampered with', async () => {
    const subjects = createSubjects(prefix)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'audit-verify-cli-test' })
    try {
      const log = busAuditLog({ bus, subjects })
      await log.record(entry('call_1', 1_767_225_600_000))
      await log.record(entry('call_2', 1_767_225_601_000))
      const clean = await runCli(['audit', '--verify', ...busArgs(prefix)])
      expect(clean.stdout).toContain('2 entries checked, 0 do not verify')
      expect(clean.code).toBe(0)

      const tampered = { ...entry('call_3', 1_767_225_602_000), actor: 'cfo' }
      await bus.durablePublish(
        subjects.audit('claw', 'approval.timeout'),
        JSON.stringify({ v: 1, type: 'audit', entry: tampered }),
        {
          msgId: 'tampered-1',
        },
      )
      const flagged = await runCli(['audit', '--verify', ...busArgs(prefix)])
      expect(flagged.code).toBe(1)
      expect(flagged.stdout).toMatch(/#3 .*approval\.timeout.*by cfo: bad-signature/)
      expect(flagged.stdout).not.toMatch(/#1 |#2 /)
      expect(flagged.stdout).toContain('3 entries checked, 1 do not verify')
    } finally {
      await bus.close()
    }
  })
})
