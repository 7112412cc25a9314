import {
  type ApprovalDecision,
  type ApprovalRequest,
  MemoryAuditLog,
  policyReviewer,
  type Reviewer,
  ScriptedReviewer,
} from '@signalbox/core'
import { callDigest } from '@signalbox/core/protocol'
import { describe, expect, it } from 'vitest'
import { waitFor } from 'xstate'
import { setup } from './approval-fixture.ts'
import { deferred, eventsOf } from './helpers.ts'

describe('a decision that does not match the pending call', () => {
  const forgeries: [string, (r: ApprovalRequest) => Partial<ApprovalDecision>, RegExp][] = [
    ['callId', () => ({ callId: 'c-other' }), /callId c-other does not match/],
    ['digest', () => ({ digest: callDigest('pay', { to: 'EVIL', amount: 250 }) }), /digest does not match/],
    ['requestId', () => ({ requestId: 'request_99' }), /requestId request_99 does not match/],
  ]
  it.each(forgeries)('with a wrong %s is rejected, audited, and never applied', async (_what, forge, why) => {
    const reviewer: Reviewer = {
      review: async (request) => ({
        requestId: request.requestId,
        callId: request.callId,
        digest: request.digest,
        approved: true,
        reviewer: 'mallory',
        decidedAt: 1_000_000,
        ...forge(request),
      }),
    }
    const s = setup({ reviewer, approvalTimeoutMs: 10_000 })
    const handle = s.agent.start('pay')
    await waitFor(handle.actor, () => eventsOf(s.events, 'approval.rejected').length > 0)
    expect(handle.actor.getSnapshot().hasTag('human')).toBe(true)
    expect(s.paid).toEqual([])
    s.clock.increment(10_000)
    await handle.result
    expect(s.paid).toEqual([])
    expect(eventsOf(s.events, 'approval.rejected')[0]?.reason).toMatch(why)
    expect(eventsOf(s.events, 'approval.decided')).toEqual([])
    expect(s.audit().map((e) => e.kind)).toEqual(['approval.rejected', 'approval.timeout'])
    expect(s.audit()[0]).toMatchObject({ actor: 'mallory', decision: 'approved', reason: expect.stringMatching(why) })
  })

  it('a malformed decision (not plain data) is rejected without breaking the run or its listeners', async () => {
    const reviewer: Reviewer = {
      review: async (request) =>
        ({ ...request, approved: 'yes', reviewer: 'bot', decidedAt: 0, sign: () => 'not data' }) as unknown as ApprovalDecision,
    }
    const s = setup({ reviewer, approvalTimeoutMs: 1_000 })
    const handle = s.agent.start('pay')
    await waitFor(handle.actor, () => eventsOf(s.events, 'approval.rejected').length > 0)
    s.clock.increment(1_000)
    expect((await handle.result).status).toBe('done')
    expect(s.paid).toEqual([])
    const rejected = eventsOf(s.events, 'approval.rejected')[0]
    expect(rejected?.reason).toMatch(/no boolean "approved"/)
    expect(rejected?.decision).toMatchObject({ approved: 'yes', reviewer: 'bot' })
    expect(s.audit().map((e) => e.kind)).toEqual(['approval.rejected', 'approval.timeout'])
  })

  it('a decision sent when nothing is pending is rejected', async () => {
    const gate = deferred()
    const s = setup({
      reviewer: new ScriptedReviewer([true]),
      hooks: { afterToolExecution: () => gate.promise.then(() => undefined) },
    })
    const { events } = s
    const handle = s.agent.start('pay')
    await waitFor(handle.actor, (snap) => snap.hasTag('hook'))
    handle.actor.send({
      type: 'approval.decision',
      decision: { requestId: 'request_1', callId: 'c1', approved: false, reviewer: 'late' },
    })
    gate.resolve()
    await handle.result
    expect(eventsOf(events, 'approval.rejected')[0]?.reason).toMatch(/no approval is pending/)
    expect(s.paid).toHaveLength(1)
  })
})

describe('the audit log', () => {
  it('is a MemoryAuditLog by default, and a failing custom log never breaks the run', async () => {
    expect(setup().agent.audit).toBeInstanceOf(MemoryAuditLog)
    const reported: string[] = []
    let calls = 0
    const s = setup({
      reviewer: policyReviewer(() => true),
      audit: {
        record: () => {
          calls++
          if (calls === 1) throw new Error('audit store down')
          return Promise.reject(new Error('audit store still down'))
        },
      },
      calls: [
        { id: 'c1', amount: 1 },
        { id: 'c2', amount: 2 },
      ],
      onInternalError: (error, where) => reported.push(`${where}: ${(error as Error).message}`),
    })
    await s.agent.run('pay')
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(s.paid).toHaveLength(2)
    expect(reported).toEqual(['audit: audit store down', 'audit: audit store still down'])
  })
})
