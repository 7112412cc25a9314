import { describe, expect, it } from 'vitest'
import { callApprovalMismatch, decideApproval, decisionMismatch, rejectedDecisionAudit } from '../../src/hitl/decision.ts'
import { callDigest } from '../../src/hitl/digest.ts'
import type { ApprovalRequest } from '../../src/hitl/types.ts'

const request: ApprovalRequest = {
  requestId: 'req-1',
  agentId: 'booker',
  runId: 'run-1',
  runPath: ['root-run'],
  callId: 'call-1',
  toolName: 'pay',
  arguments: { amount: 120 },
  digest: callDigest('pay', { amount: 120 }),
  deadline: 61_000,
  requestedAt: 1_000,
}

describe('decideApproval', () => {
  it('quotes the request it answers, so it fits that request only', () => {
    const decision = decideApproval(request, true, 'ana', 5_000)
    expect(decision).toEqual({
      requestId: 'req-1',
      callId: 'call-1',
      digest: request.digest,
      approved: true,
      reviewer: 'ana',
      decidedAt: 5_000,
      deadline: 61_000,
    })
    expect(decisionMismatch(request, decision)).toBeUndefined()
    expect(decisionMismatch({ ...request, requestId: 'req-2' }, decision)).toMatch(/requestId req-1/)
  })

  it('keeps a reason only when one is given', () => {
    expect(decideApproval(request, { approved: false, reason: 'too much' }, 'ana', 5_000)).toMatchObject({
      approved: false,
      reason: 'too much',
    })
    expect('reason' in decideApproval(request, { approved: false, reason: undefined }, 'ana', 5_000)).toBe(false)
  })
})

describe('decisionMismatch', () => {
  const good = decideApproval(request, true, 'ana', 5_000)

  it.each([
    ['no request pending', undefined, good, 'no approval is pending'],
    ['not an object', request, 'yes', 'the decision is not an object'],
    ['null', request, null, 'the decision is not an object'],
    ['no boolean approved', request, { ...good, approved: 'yes' }, 'the decision has no boolean "approved"'],
    ['nobody decided', request, { ...good, reviewer: '' }, 'the decision does not say who decided'],
    ['another request', request, { ...good, requestId: 'req-9' }, 'requestId req-9 does not match the pending request'],
    ['another call', request, { ...good, callId: 'call-9' }, 'callId call-9 does not match the pending call call-1'],
    [
      'other arguments',
      request,
      { ...good, digest: callDigest('pay', { amount: 99_999 }) },
      'the digest does not match the pending call (arguments differ from what was shown)',
    ],
    ['another deadline', request, { ...good, deadline: 99_000 }, "the decision quotes deadline 99000, not the request's 61000"],
    [
      'an edit whose digest is not the edit',
      request,
      { ...good, arguments: { amount: 50 }, editedDigest: callDigest('pay', { amount: 60 }) },
      'the editedDigest does not match the edited arguments',
    ],
    [
      'an edited digest without the edit',
      request,
      { ...good, editedDigest: callDigest('pay', { amount: 60 }) },
      'the decision has an editedDigest but no edited arguments',
    ],
  ])('%s', (_name, pending, decision, reason) => {
    expect(decisionMismatch(pending, decision)).toBe(reason)
  })

  it('accepts an edit with the digest of the edit, and (unsigned, in process) an edit without one', () => {
    const edit = { amount: 50 }
    expect(decisionMismatch(request, { ...good, arguments: edit, editedDigest: callDigest('pay', edit) })).toBeUndefined()
    expect(decisionMismatch(request, { ...good, arguments: edit })).toBeUndefined()
    // A decision that quotes no deadline (an older reviewer) is still bound by the rest.
    const { deadline: _deadline, ...undated } = good
    expect(decisionMismatch(request, undated)).toBeUndefined()
  })
})

describe('callApprovalMismatch (what a tool host checks against the call itself)', () => {
  const call = { callId: 'call-1', toolName: 'pay', arguments: { amount: 120 } }
  const good = decideApproval(request, true, 'ana', 5_000)
  const edit = { amount: 50 }
  const edited = { ...good, arguments: edit, editedDigest: callDigest('pay', edit) }

  it('accepts the approval of exactly this call, and of its edit when the call carries the edited arguments', () => {
    expect(callApprovalMismatch(call, good)).toBeUndefined()
    expect(callApprovalMismatch({ ...call, arguments: edit }, edited)).toBeUndefined()
  })

  it.each([
    ['not a decision', 'yes', 'malformed', 'the decision is not an object'],
    ['no deadline', { ...good, deadline: undefined }, 'malformed', "the decision does not quote its request's deadline"],
    ['a denial', { ...good, approved: false, reason: 'no' }, 'denied', 'the decision denies the call (no)'],
    ['another call', { ...good, callId: 'call-9' }, 'wrong-call', 'it approves call call-9, not call-1'],
    ['other arguments', { ...good, digest: callDigest('pay', { amount: 1 }) }, 'wrong-digest', 'with other arguments'],
    ['an edit without its digest', { ...good, arguments: edit }, 'malformed', 'without the digest of the edit'],
    [
      'an edit whose digest is not the edit',
      { ...edited, arguments: { amount: 51 } },
      'wrong-digest',
      'the editedDigest does not match the edited arguments',
    ],
  ])('%s', (_name, decision, code, reason) => {
    const problem = callApprovalMismatch(call, decision)
    expect(problem?.code).toBe(code)
    expect(problem?.reason).toContain(reason)
  })

  it('refuses the arguments as shown when the reviewer approved an edit, and an edit when the call carries another', () => {
    // The host must run the edit it verified: the original arguments no longer count.
    expect(callApprovalMismatch(call, edited)).toMatchObject({ code: 'wrong-digest', reason: expect.stringContaining('edited') })
    expect(callApprovalMismatch({ ...call, arguments: { amount: 49 } }, edited)?.code).toBe('wrong-digest')
  })
})

describe('rejectedDecisionAudit', () => {
  it('records who tried what on which call, and why it was not applied', () => {
    const forged = { ...decideApproval(request, true, 'mallory', 7_000), digest: callDigest('pay', { amount: 1 }) }
    expect(rejectedDecisionAudit({ run: request, request, decision: forged, reason: 'digest differs', at: 8_000 })).toEqual({
      kind: 'approval.rejected',
      agentId: 'booker',
      runId: 'run-1',
      runPath: ['root-run'],
      callId: 'call-1',
      toolName: 'pay',
      shown: { amount: 120 },
      digest: request.digest,
      decision: 'approved',
      reason: 'digest differs',
      actor: 'mallory',
      requestedAt: 1_000,
      decidedAt: 8_000,
    })
  })

  it('records a malformed decision with no request as such', () => {
    expect(rejectedDecisionAudit({ run: request, request: undefined, decision: 42, reason: 'late', at: 8_000 })).toEqual({
      kind: 'approval.rejected',
      agentId: 'booker',
      runId: 'run-1',
      runPath: ['root-run'],
      decision: 'malformed',
      reason: 'late',
      actor: 'unknown',
      decidedAt: 8_000,
    })
  })
})
