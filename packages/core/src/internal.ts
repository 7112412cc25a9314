/**
 * `@signalbox/core/internal`: helpers the signalbox packages and their tests share with each other.
 * Not part of the public API (unstable: names here may change in any release).
 */
export { untilAborted, whenAborted } from './abort.ts'
export { type BackoffPolicy, backoffDelay } from './backoff.ts'
export {
  DEFAULT_ACK_WAIT_MS,
  DEFAULT_DUPLICATE_WINDOW_MS,
  DEFAULT_MAX_PAYLOAD,
  DEFAULT_STALL_MS,
  DURABLE_ONLY_REASON,
} from './bus/bus.ts'
export { agentPurpose } from './bus/subject-families.ts'
export {
  assertPublishSubject,
  assertSubscribeSubject,
  assertToken,
  encodeEventType,
  MAX_TOKEN_LENGTH,
  subjectCovers,
  subjectMatches,
  tokensMatch,
} from './bus/subjects.ts'
export { sleep } from './clock.ts'
export { formatDuration } from './duration.ts'
export { asError, describeError, deserializeError, serializeError } from './errors.ts'
export {
  type CallApprovalProblem,
  callApprovalMismatch,
  decisionMismatch,
  type PendingCall,
  rejectedAnswerAudit,
  rejectedDecisionAudit,
} from './hitl/decision.ts'
export { HookChain } from './hooks.ts'
export { agentMachine } from './machine/agent-machine.ts'
export { statePath } from './machine/state-path.ts'
export { isName, NAME_RULE } from './names.ts'
export { payloadSample } from './protocol/codec.ts'
export { type MessageBody, openMessage } from './protocol/envelope.ts'
export { httpStatusError, otherCallError, preview, type RefusalHints, unreachableError } from './provider/endpoint-errors.ts'
export { perToolList } from './provider/tool-lists.ts'
export { finishedStatus, isFinished } from './run-status.ts'
export { formatIssues } from './schema.ts'
export { FINISHED_RUN_STATUSES, RESUMABLE_RUN_STATUSES } from './store/checkpoint.ts'
export {
  findCall,
  finishCall,
  idempotencyKey,
  OUTCOME_UNKNOWN,
  outcomeUnknownText,
  pruneLedger,
  resumeToolCall,
  startCall,
} from './store/ledger.ts'
export { claimedCheckpoint, runIdOfKey, runKey } from './store/run-store.ts'
export { stringifyToolOutput } from './tool.ts'
