/**
 * Signed audit entries and their offline check. The writer (the agent that applied a decision)
 * signs the whole entry; the entry also carries the signed decision, answer or steering it
 * records (`evidence`), so a reader can check both who decided and that the entry says what
 * was decided, without trusting whoever could publish on the audit subjects.
 */

import { fromPublic } from '@nats-io/nkeys'
import type { AuditEntry } from '@signalbox/core'
import { canonicalJson } from '@signalbox/core/protocol'
import type { TrustPolicy } from './policy.ts'
import { type Signer, verifySignature } from './sign.ts'

export const AUDIT_SIGNATURE_DOMAIN = 'signalbox-audit-v1\n'

/** The bytes an audit entry's signature covers: the domain tag, then the canonical JSON of the entry without `signature`. */
export function auditSigningInput(entry: AuditEntry, signer: string): Uint8Array {
  const { signature: _signature, ...rest } = entry
  return new TextEncoder().encode(AUDIT_SIGNATURE_DOMAIN + canonicalJson({ ...rest, signer }))
}

/** The entry, signed by its writer. */
export function signAuditEntry(signer: Signer, entry: AuditEntry): AuditEntry {
  const input = auditSigningInput(entry, signer.publicKey)
  return { ...entry, signer: signer.publicKey, signature: Buffer.from(signer.signBytes(input)).toString('base64url') }
}

export type AuditProblemCode =
  | 'unsigned'
  | 'bad-signature'
  | 'unknown-writer'
  | 'evidence-invalid'
  | 'evidence-mismatch'
  | 'evidence-not-trusted'

export interface AuditProblem {
  code: AuditProblemCode
  reason: string
}

export interface AuditVerifyOptions {
  /** Keys allowed to write entries (the agents' keys). Default: any key whose signature verifies. */
  writers?: readonly string[]
  /** Also check each entry's evidence against who may decide what. */
  policy?: TrustPolicy
}

const DECIDED_KINDS: Record<string, string> = {
  'approval.granted': 'approval.decision',
  'approval.denied': 'approval.decision',
  'question.answered': 'answer',
  'steering.applied': 'steer',
}

/** Every reason `entry` does not verify; empty when it does. */
export function verifyAuditEntry(entry: AuditEntry, options: AuditVerifyOptions = {}): AuditProblem[] {
  const problems: AuditProblem[] = []
  const { signer, signature } = entry
  if (typeof signer !== 'string' || typeof signature !== 'string') {
    problems.push({ code: 'unsigned', reason: 'the entry carries no writer signature' })
  } else {
    let valid = false
    try {
      valid = fromPublic(signer).verify(auditSigningInput(entry, signer), Buffer.from(signature, 'base64url'))
    } catch {
      valid = false
    }
    if (!valid)
      problems.push({ code: 'bad-signature', reason: "the writer's signature does not match the entry (altered after signing?)" })
    else if (options.writers && !options.writers.includes(signer)) {
      problems.push({ code: 'unknown-writer', reason: `written by ${signer}, which is not a known writer` })
    }
  }
  const expected = DECIDED_KINDS[entry.kind]
  if (entry.evidence !== undefined || expected !== undefined) problems.push(...checkEvidence(entry, expected, options))
  return problems
}

function checkEvidence(entry: AuditEntry, expectedType: string | undefined, options: AuditVerifyOptions): AuditProblem[] {
  const evidence = entry.evidence
  if (evidence === undefined)
    return [{ code: 'evidence-invalid', reason: `a ${entry.kind} entry without the signed message it records` }]
  // An entry read from a log is untrusted data: evidence that is not a message is flagged, not dereferenced.
  if (evidence === null || typeof evidence !== 'object')
    return [
      {
        code: 'evidence-invalid',
        reason: `the recorded evidence is not a signed message (${evidence === null ? 'null' : typeof evidence})`,
      },
    ]
  const signature = verifySignature(evidence)
  if (!signature.ok) return [{ code: 'evidence-invalid', reason: `the recorded ${String(evidence.type)}: ${signature.reason}` }]
  const mismatches: string[] = []
  if (expectedType !== undefined && evidence.type !== expectedType) mismatches.push(`type ${String(evidence.type)}`)
  if (evidence.type === 'approval.decision') {
    if (evidence.callId !== entry.callId) mismatches.push('callId')
    if (evidence.digest !== entry.digest) mismatches.push('digest')
    const granted = entry.kind === 'approval.granted'
    if (evidence.approved !== granted) mismatches.push('decision')
    if ((evidence.reason ?? undefined) !== (entry.reason ?? undefined)) mismatches.push('reason')
  } else if (evidence.type === 'answer') {
    if (evidence.answer !== entry.decision) mismatches.push('answer')
  } else if (evidence.type === 'steer') {
    if (evidence.text !== entry.decision) mismatches.push('text')
  }
  const name = options.policy?.nameOf(signature.signer)
  if (name !== undefined && entry.actor !== name) mismatches.push('actor')
  const problems: AuditProblem[] = []
  if (mismatches.length > 0) {
    problems.push({
      code: 'evidence-mismatch',
      reason: `the entry disagrees with the signed message on ${mismatches.join(', ')}`,
    })
  }
  if (options.policy) {
    const verdict = options.policy.check(evidence, {
      ...(entry.toolName !== undefined ? { toolName: entry.toolName } : {}),
      agentId: entry.agentId,
    })
    if (!verdict.ok) problems.push({ code: 'evidence-not-trusted', reason: verdict.reason })
  }
  return problems
}

export interface AuditVerifyReport {
  checked: number
  failures: { index: number; entry: AuditEntry; problems: AuditProblem[] }[]
}

/** Checks every entry of a stored audit trail offline; lists those that do not verify. */
export function verifyAuditTrail(entries: readonly AuditEntry[], options: AuditVerifyOptions = {}): AuditVerifyReport {
  const failures: AuditVerifyReport['failures'] = []
  entries.forEach((entry, index) => {
    const problems = verifyAuditEntry(entry, options)
    if (problems.length > 0) failures.push({ index, entry, problems })
  })
  return { checked: entries.length, failures }
}
