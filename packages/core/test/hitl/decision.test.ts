import { describe, expect, it } from 'vitest'
import { decideApproval, decisionMismatch, rejectedDecisionAudit } from '../../src/hitl/decision.ts'
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
  ])('%s', (_name, pending, decision, reason) => {
    expect(decisionMismatch(pending, decision)).toBe(reason)
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
