/** `@signalbox/core/store`: where durable runs are kept (memory, files, any `RunStore`), the checkpoint format and the tool-call ledger. */
export {
  AppliedDecision,
  CHECKPOINT_VERSION,
  Checkpoint,
  LedgerEntry,
  type LedgerToolResult,
  PendingApproval,
  PendingQuestion,
  RunLease,
  RunParking,
  type StoredRun,
  StoredRunStatus,
} from './checkpoint.ts'
export { decodeCheckpoint, encodeCheckpoint } from './codec.ts'
export {
  CheckpointError,
  type CheckpointErrorCode,
  RunStoreError,
  type RunStoreErrorCode,
  StoreUnavailableError,
} from './errors.ts'
export { FileRunStore, type FileRunStoreOptions } from './file-run-store.ts'
export type { ResumeDecision } from './ledger.ts'
export { MemoryRunStore } from './memory-run-store.ts'
export {
  type AppendMessagesOptions,
  assembleTranscript,
  type MessageBatch,
  type MessagesToAppend,
  parseBatch,
} from './message-log.ts'
export { type PruneRunsOptions, type PruneRunsResult, pruneRuns } from './prune.ts'
export type { ResumeAllResult, ResumeOptions } from './resume-all.ts'
export {
  type ClaimOptions,
  claimRun,
  type ListRunsOptions,
  matchesListing,
  parkRun,
  type RunListing,
  type RunStore,
  type SaveOptions,
} from './run-store.ts'
