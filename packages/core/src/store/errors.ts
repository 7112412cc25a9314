import { SignalboxError } from '../errors.ts'

export type CheckpointErrorCode =
  /** The stored bytes end before the JSON does (a write cut short, a disk filled up). */
  | 'CHECKPOINT_TRUNCATED'
  /** The stored bytes are not UTF-8 JSON at all. */
  | 'CHECKPOINT_INVALID_JSON'
  /** Written by a newer (or unknown) signalbox: refused rather than misread. */
  | 'CHECKPOINT_UNSUPPORTED_VERSION'
  /** JSON of the right version whose fields do not match the schema. */
  | 'CHECKPOINT_INVALID'

/**
 * A stored checkpoint that cannot be read. It always names the run, so one bad file is reported
 * and the other runs still load.
 */
export class CheckpointError extends SignalboxError {
  readonly runId: string
  constructor(
    code: CheckpointErrorCode,
    runId: string,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(code, `Run "${runId}": ${message}`, { cause: options.cause, fault: 'runtime', details: { runId, ...options.details } })
    this.runId = runId
  }
}

export type RunStoreErrorCode =
  /** No checkpoint is stored for the run. */
  | 'RUN_NOT_FOUND'
  /** The run changed since the caller read it (compare-and-set lost): reload before writing. */
  | 'RUN_REVISION_CONFLICT'
  /** Another owner's lease on the run has not expired. */
  | 'RUN_LEASE_HELD'
  /** The caller does not hold the run's lease (it expired and someone else took it, or never claimed). */
  | 'RUN_NOT_OWNER'
  /** A run id the store cannot key (empty, too long, control characters). */
  | 'RUN_ID_INVALID'
  /** A value over the store's size limit (e.g. 1 MiB per KV value). */
  | 'RUN_STORE_TOO_LARGE'
  /** A message-log append that would leave a gap in the transcript. */
  | 'RUN_TRANSCRIPT_GAP'
  /** `agent.resume`: the run is finished, or belongs to another agent. */
  | 'RUN_NOT_RESUMABLE'

/** A run-store operation refused. `runId` says which run; `details` carries the revisions or owners. */
export class RunStoreError extends SignalboxError {
  readonly runId: string
  constructor(code: RunStoreErrorCode, runId: string, message: string, details: Record<string, unknown> = {}) {
    super(code, `Run "${runId}": ${message}`, {
      fault: code === 'RUN_ID_INVALID' ? 'user' : 'runtime',
      details: { runId, ...details },
    })
    this.runId = runId
  }
}

/**
 * A store that could not be reached within its retry bound (a JetStream cluster without a leader
 * for longer than that, a server down). `runId` is set when the operation was on one run.
 */
export class StoreUnavailableError extends SignalboxError {
  readonly runId: string | undefined
  constructor(what: string, retryMs: number, options: { cause?: unknown; runId?: string } = {}) {
    const run = options.runId === undefined ? '' : `Run "${options.runId}": `
    const last = options.cause instanceof Error ? ` (last error: ${options.cause.message})` : ''
    super('RUN_STORE_UNAVAILABLE', `${run}${what} failed: the run store did not answer within ${retryMs} ms${last}.`, {
      cause: options.cause,
      fault: 'runtime',
      details: { ...(options.runId === undefined ? {} : { runId: options.runId }), retryMs },
    })
    this.runId = options.runId
  }
}
