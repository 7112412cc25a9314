/**
 * `@signalbox/actors/internal`: helpers the signalbox packages (the CLI, the console) and their
 * tests share with `@signalbox/actors`. Not part of the public API (unstable: names here may
 * change in any release).
 */

export { matchesAudit } from './audit/bus-audit.ts'
export {
  definitionOf,
  globalSessionId,
  publicEvent,
  publicSnapshot,
  redactAgentContext,
  redactContext,
  runSessionId,
  STATELY_INSPECT_VERSION,
} from './inspect/convert.ts'
export { defaultRuntimeId } from './inspect/inspector.ts'
export { DEFAULT_APPROVAL_CLOCK_SKEW_MS } from './tools/approval-gate.ts'
export { TOOL_QUEUE_GROUP } from './tools/tool-host.ts'
export { AUDIT_SIGNATURE_DOMAIN, auditSigningInput } from './trust/audit-signature.ts'
export { encodingProblem } from './trust/canonical.ts'
export { permissionsTable } from './trust/permissions.ts'
export { claimedName, provenActor, UNVERIFIED_ACTOR, whyNotAcceptable } from './trust/policy.ts'
export { evidenceKey } from './trust/signed-audit.ts'
