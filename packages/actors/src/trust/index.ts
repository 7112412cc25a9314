export { signAuditEntry } from './audit-signature.ts'
export {
  type AuditEntryReport,
  type AuditProblem,
  type AuditProblemCode,
  type AuditVerifyOptions,
  type AuditVerifyReport,
  type SignedBy,
  verifyAuditEntry,
  verifyAuditTrail,
} from './audit-verify.ts'
export { SIGNATURE_DOMAIN, SIGNED_FIELDS, type SignableType, type Signed, signingInput } from './canonical.ts'
export { isValidPublicKey, newUserSeed } from './keys.ts'
export {
  authorizationBlock,
  type PermissionRule,
  type PermissionScope,
  PermissionScopeError,
  ROLES,
  type Role,
  type RolePermissions,
  rolePermissions,
  type UserLogin,
  userEntry,
} from './permissions.ts'
export {
  type Allowed,
  agentKeysPolicy,
  createTrustPolicy,
  type TrustContext,
  type TrustPolicy,
  TrustPolicyError,
  type TrustPolicyOptions,
  type TrustRejectionCode,
  type TrustVerdict,
} from './policy.ts'
export { parseTrustPolicy } from './policy-file.ts'
export { createSigner, type SignatureCheck, type Signer, SigningKeyError, verifySignature } from './sign.ts'
export { createEvidenceBook, type EvidenceBook, type SignedAuditLogOptions, signedAuditLog } from './signed-audit.ts'
