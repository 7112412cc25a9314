/**
 * What a reviewer checks about a request before anyone is asked: that the digest matches the
 * arguments shown (else it refuses, by denying: approving arguments other than those that will run
 * is the one thing review must never do), and, with a trust policy that has an `agents` section,
 * that an agent the policy knows signed it (else it is not shown at all: anyone with publish rights
 * can fake requests). A policy without `agents` (say, the agents' own policy, shared with reviewers
 * for its `reviewers` and `answerers`) leaves requests unchecked.
 */
import { describeError } from '@signalbox/core/internal'
import { type ApprovalRequestMessage, callDigest } from '@signalbox/core/protocol'
import type { TrustPolicy } from '../trust/policy.ts'

/** Who sent a request, as far as signatures tell. */
export type RequestOrigin =
  | { verified: true; signer: string; name: string }
  | { verified: false; reason: string; signer?: string }

export type RequestCheck =
  | { ok: true; origin: RequestOrigin }
  | { ok: false; action: 'deny'; reason: string; origin: RequestOrigin }
  | { ok: false; action: 'ignore'; reason: string; origin: RequestOrigin }

export function checkApprovalRequest(request: ApprovalRequestMessage, trust: TrustPolicy | undefined): RequestCheck {
  let origin: RequestOrigin = {
    verified: false,
    reason:
      trust === undefined
        ? 'no trust policy: requests are not checked'
        : 'the trust policy names no agents: requests are not checked',
  }
  if (trust !== undefined && trust.options.agents !== undefined) {
    const verdict = trust.check(request, { agentId: request.agentId })
    if (!verdict.ok) {
      const reason = `${verdict.code}: ${verdict.reason}`
      origin = { verified: false, reason, ...(verdict.signer ? { signer: verdict.signer } : {}) }
      return { ok: false, action: 'ignore', reason: `not from a trusted agent (${reason})`, origin }
    }
    origin = { verified: true, signer: verdict.signer, name: verdict.name }
  }
  let digest: string
  try {
    digest = callDigest(request.toolName, request.arguments)
  } catch (error) {
    // Arguments nested too deep to encode (a stack overflow): refused once, never retried.
    return { ok: false, action: 'deny', reason: `refused: the arguments cannot be checked (${describeError(error)})`, origin }
  }
  if (digest !== request.digest) {
    return {
      ok: false,
      action: 'deny',
      reason: 'refused: the digest does not match the arguments shown, so what would run is not what was shown',
      origin,
    }
  }
  return { ok: true, origin }
}
