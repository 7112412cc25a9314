/**
 * Signed audit entries. The writer (the agent that applied a decision) signs the whole entry; the
 * entry also carries the signed decision, answer or steering it records (`evidence`), so a reader
 * can check both who decided and that the entry says what was decided, without trusting whoever
 * could publish on the audit subjects (`audit-verify.ts`).
 */

import type { AuditEntry } from '@signalbox/core'
import { canonicalJson } from '@signalbox/core/protocol'
import type { Signer } from './sign.ts'

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
