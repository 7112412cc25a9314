/**
 * The agent's side of a verifiable audit trail: the signed messages it accepted (decisions,
 * answers, steering) are kept as evidence until the entry that records them is written, and every
 * entry is signed with the agent's key (protocol §17.5). The agent machine writes the entries; this
 * wrapper adds what only the trust layer knows, so the machine stays unaware of keys.
 */
import type { AuditEntry, AuditLog } from '@signalbox/core'
import { signAuditEntry } from './audit-signature.ts'
import type { Signed } from './canonical.ts'
import { claimedName } from './policy.ts'
import type { Signer } from './sign.ts'

/** Bound on evidence waiting for its entry (a decision whose entry never comes is dropped oldest first). */
const MAX_PENDING = 10_000

/** Signed messages accepted by the agent, waiting for the audit entry that records them. */
export interface EvidenceBook {
  /** Keeps `message` (as received) for the entry of `key` (see `evidenceKey`). */
  remember(key: string, message: Signed): void
  /** The evidence for `entry`, removed from the book; undefined when there is none. */
  take(entry: AuditEntry): Record<string, unknown> | undefined
}

/** Which entry a piece of evidence belongs to: decisions by call and digest, answers by call, steering by its text. */
export function evidenceKey(entry: Pick<AuditEntry, 'kind' | 'callId' | 'digest' | 'decision' | 'runId'>): string | undefined {
  switch (entry.kind) {
    case 'approval.granted':
    case 'approval.denied':
      return `decision:${entry.callId}:${entry.digest}`
    case 'question.answered':
      return `answer:${entry.callId}`
    case 'steering.applied':
      return `steer:${entry.decision}`
    default:
      return undefined
  }
}

export function createEvidenceBook(): EvidenceBook {
  const pending = new Map<string, Record<string, unknown>>()
  return {
    remember(key, message) {
      pending.delete(key)
      pending.set(key, { ...message })
      if (pending.size > MAX_PENDING) pending.delete(pending.keys().next().value as string)
    },
    take(entry) {
      const key = evidenceKey(entry)
      if (key === undefined) return undefined
      const found = pending.get(key)
      // Steering applied to several runs is recorded once per run: keep it for the others.
      if (found !== undefined && entry.kind !== 'steering.applied') pending.delete(key)
      return found
    },
  }
}

export interface SignedAuditLogOptions {
  /** Where entries go (usually `busAuditLog`). */
  log: AuditLog
  /** The agent's key: every entry is signed with it. */
  signer: Signer
  /** Evidence the agent's remote reviewer, answerer and steering accepted. */
  evidence?: EvidenceBook
}

/**
 * An audit log whose entries carry their evidence and the writer's signature. The name the
 * evidence gives its sender is kept as `claimed` when it is not the entry's actor (the policy's
 * name for the key that signed it).
 */
export function signedAuditLog(options: SignedAuditLogOptions): AuditLog {
  return {
    record(entry) {
      const evidence = entry.evidence ?? options.evidence?.take(entry)
      const claimed = entry.claimed ?? (evidence === undefined ? undefined : claimedName(evidence))
      const complete: AuditEntry = {
        ...entry,
        ...(evidence === undefined ? {} : { evidence }),
        ...(claimed === undefined || claimed === entry.actor ? {} : { claimed }),
      }
      return options.log.record(signAuditEntry(options.signer, complete))
    },
  }
}
