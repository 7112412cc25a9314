/**
 * The offline check of a stored audit trail (docs/protocol.md §17.5), pinned to known keys: every
 * entry must be signed by one of the writers (the agents' keys), and an entry that records a
 * message the agent applied (a decision, an answer, a correction) must carry it, signed by a key
 * the policy allows, saying what the entry says. An entry that records a message the agent
 * refused (`approval.rejected`, `question.rejected`, `approval.duplicate`) carries it as it came:
 * its signature is not the writer's and may not verify (that may be why it was refused), so it is
 * not required to; the entry must agree with it and name its sender as the policy does.
 */

import type { AuditEntry } from '@signalbox/core'
import { auditSigningInput } from './audit-signature.ts'
import type { Signed } from './canonical.ts'
import { verifyEd25519 } from './ed25519.ts'
import { claimedName, provenActor, type TrustPolicy } from './policy.ts'
import { verifySignature } from './sign.ts'

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
  /**
   * The keys allowed to write entries (the agents'), as a list or key → name. An entry signed by
   * any other key fails (`unknown-writer`) however valid its signature: a forgery signed with a
   * fresh key. Default: any key whose signature verifies (nothing pinned: say so to the reader).
   */
  writers?: readonly string[] | Readonly<Record<string, string>>
  /** Who may decide what (the agents' trust policy): names keys, and checks each applied decision's signer. */
  policy?: TrustPolicy
}

/** A key that signed, with the name the writers or the policy give it. */
export interface SignedBy {
  key: string
  name?: string
}

export interface AuditEntryReport {
  index: number
  entry: AuditEntry
  ok: boolean
  /** The key that signed the entry (its writer), when its signature verifies. */
  writer?: SignedBy
  /** The key that signed the message the entry records, when that signature verifies. */
  evidence?: SignedBy
  problems: AuditProblem[]
}

export interface AuditVerifyReport {
  checked: number
  /** One report per entry, in order. */
  entries: AuditEntryReport[]
  /** The entries that do not verify. */
  failures: { index: number; entry: AuditEntry; problems: AuditProblem[] }[]
}

/** Kinds that record a message the agent applied: it must be there, valid, allowed, and agree. */
const APPLIED: Record<string, string> = {
  'approval.granted': 'approval.decision',
  'approval.denied': 'approval.decision',
  'question.answered': 'answer',
  'steering.applied': 'steer',
}

/** Kinds that record a message the agent refused, as it came. */
const REFUSED: Record<string, string> = {
  'approval.rejected': 'approval.decision',
  'approval.duplicate': 'approval.decision',
  'question.rejected': 'answer',
}

/** Every reason `entry` does not verify; empty when it does. */
export function verifyAuditEntry(entry: AuditEntry, options: AuditVerifyOptions = {}): AuditProblem[] {
  return reportEntry(entry, 0, options).problems
}

/** Checks every entry of a stored audit trail offline; reports each (who signed it) and lists those that do not verify. */
export function verifyAuditTrail(entries: readonly AuditEntry[], options: AuditVerifyOptions = {}): AuditVerifyReport {
  const reports = entries.map((entry, index) => reportEntry(entry, index, options))
  return {
    checked: entries.length,
    entries: reports,
    failures: reports.filter((r) => !r.ok).map(({ index, entry, problems }) => ({ index, entry, problems })),
  }
}

function writerNames(options: AuditVerifyOptions): ReadonlyMap<string, string | undefined> | undefined {
  const { writers } = options
  if (writers === undefined) return undefined
  if (Array.isArray(writers)) return new Map((writers as readonly string[]).map((key) => [key, options.policy?.nameOf(key)]))
  return new Map(Object.entries(writers as Readonly<Record<string, string>>))
}

function reportEntry(entry: AuditEntry, index: number, options: AuditVerifyOptions): AuditEntryReport {
  const problems: AuditProblem[] = []
  const report: AuditEntryReport = { index, entry, ok: true, problems }
  const { signer, signature } = entry
  if (typeof signer !== 'string' || typeof signature !== 'string') {
    problems.push({ code: 'unsigned', reason: 'the entry carries no writer signature' })
  } else {
    let valid = false
    try {
      valid = verifyEd25519(signer, auditSigningInput(entry, signer), Buffer.from(signature, 'base64url'))
    } catch {
      valid = false
    }
    if (!valid) {
      problems.push({ code: 'bad-signature', reason: "the writer's signature does not match the entry (altered after signing?)" })
    } else {
      const writers = writerNames(options)
      const name = writers?.get(signer) ?? options.policy?.nameOf(signer)
      report.writer = name === undefined ? { key: signer } : { key: signer, name }
      if (writers !== undefined && !writers.has(signer)) {
        problems.push({ code: 'unknown-writer', reason: `written by ${signer}, which is not one of the writers' keys` })
      }
    }
  }
  const evidence = entry.evidence as unknown
  if (evidence !== undefined && evidence !== null && typeof evidence === 'object') {
    const checked = verifySignature(evidence as Signed)
    if (checked.ok) {
      const name = options.policy?.nameOf(checked.signer)
      report.evidence = name === undefined ? { key: checked.signer } : { key: checked.signer, name }
    }
  }
  const applied = APPLIED[entry.kind]
  const refused = REFUSED[entry.kind]
  if (applied !== undefined) problems.push(...checkApplied(entry, applied, options))
  else if (refused !== undefined) problems.push(...checkRefused(entry, refused, options))
  else if (evidence !== undefined && (evidence === null || typeof evidence !== 'object')) problems.push(notAMessage(evidence))
  report.ok = problems.length === 0
  return report
}

function notAMessage(evidence: unknown): AuditProblem {
  return {
    code: 'evidence-invalid',
    reason: `the recorded evidence is not a signed message (${evidence === null ? 'null' : typeof evidence})`,
  }
}

/** An applied message: present, validly signed, by a key the policy allows, and what the entry says. */
function checkApplied(entry: AuditEntry, expectedType: string, options: AuditVerifyOptions): AuditProblem[] {
  const evidence = entry.evidence as unknown
  if (evidence === undefined)
    return [{ code: 'evidence-invalid', reason: `a ${entry.kind} entry without the signed message it records` }]
  // An entry read from a log is untrusted data: evidence that is not a message is flagged, not dereferenced.
  if (evidence === null || typeof evidence !== 'object') return [notAMessage(evidence)]
  const message = evidence as Signed
  const signature = verifySignature(message)
  if (!signature.ok) return [{ code: 'evidence-invalid', reason: `the recorded ${String(message.type)}: ${signature.reason}` }]
  const mismatches: string[] = []
  if (message.type !== expectedType) mismatches.push(`type ${String(message.type)}`)
  if (message.type === 'approval.decision') {
    if (message.callId !== entry.callId) mismatches.push('callId')
    if (message.digest !== entry.digest) mismatches.push('digest')
    if (message.approved !== (entry.kind === 'approval.granted')) mismatches.push('decision')
    if ((message.reason ?? undefined) !== (entry.reason ?? undefined)) mismatches.push('reason')
  } else if (message.type === 'answer') {
    if (message.answer !== entry.decision) mismatches.push('answer')
  } else if (message.type === 'steer') {
    if (message.text !== entry.decision) mismatches.push('text')
  }
  const name = options.policy?.nameOf(signature.signer)
  if (name !== undefined && entry.actor !== name) mismatches.push('actor')
  if (entry.claimed !== undefined && entry.claimed !== claimedName(message)) mismatches.push('claimed')
  const problems: AuditProblem[] = []
  if (mismatches.length > 0) {
    problems.push({
      code: 'evidence-mismatch',
      reason: `the entry disagrees with the signed message on ${mismatches.join(', ')}`,
    })
  }
  if (options.policy) {
    const verdict = options.policy.check(message, {
      ...(entry.toolName !== undefined ? { toolName: entry.toolName } : {}),
      agentId: entry.agentId,
    })
    if (!verdict.ok) problems.push({ code: 'evidence-not-trusted', reason: verdict.reason })
  }
  return problems
}

/**
 * A refused message, as it came (absent when it carried no signature): its own signature is not
 * checked (it may be why it was refused). The entry must say what it said, and be audited under
 * who provably sent it: with a policy, the policy's name for the key whose signature verifies, the
 * key when unnamed, `unverified` when none does; the name the message claims is `claimed`.
 */
function checkRefused(entry: AuditEntry, expectedType: string, options: AuditVerifyOptions): AuditProblem[] {
  const evidence = entry.evidence as unknown
  if (evidence === undefined) return []
  if (evidence === null || typeof evidence !== 'object') return [notAMessage(evidence)]
  const message = evidence as Signed
  const mismatches: string[] = []
  if (message.type !== expectedType) mismatches.push(`type ${String(message.type)}`)
  if (message.type === 'approval.decision') {
    const said = typeof message.approved === 'boolean' ? (message.approved ? 'approved' : 'denied') : 'malformed'
    if (entry.decision !== said) mismatches.push('decision')
    if (typeof message.callId === 'string' && message.callId !== entry.callId) mismatches.push('callId')
  } else if (message.type === 'answer') {
    if (entry.decision !== (typeof message.answer === 'string' ? message.answer : 'malformed')) mismatches.push('answer')
  }
  const claimed = claimedName(message)
  if (claimed !== undefined && (entry.claimed ?? entry.actor) !== claimed) mismatches.push('claimed')
  if (options.policy !== undefined && entry.actor !== provenActor(options.policy, message)) mismatches.push('actor')
  return mismatches.length === 0
    ? []
    : [{ code: 'evidence-mismatch', reason: `the entry disagrees with the message it refused on ${mismatches.join(', ')}` }]
}
