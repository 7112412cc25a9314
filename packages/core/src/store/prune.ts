import { ConfigError } from '../errors.ts'
import type { StoredRun, StoredRunStatus } from './checkpoint.ts'
import { FINISHED_RUN_STATUSES, RESUMABLE_RUN_STATUSES } from './checkpoint.ts'
import { type CheckpointError, RunStoreError } from './errors.ts'
import type { RunStore } from './run-store.ts'

export interface PruneRunsOptions {
  /** Runs last saved before this time (epoch ms) are pruned: `now - retention`. */
  before: number
  /** Which runs may go. Default: the finished ones (`done`, `failed`, `cancelled`); `parked` may be added. */
  status?: readonly StoredRunStatus[]
  /** Only the runs of this agent. */
  agentId?: string
  /** List what would be pruned, delete nothing. */
  dryRun?: boolean
  signal: AbortSignal
}

export interface PruneRunsResult {
  /** The runs deleted (or, with `dryRun`, that would be). */
  pruned: StoredRun[]
  /** Runs that could not be read (kept, as found) or deleted. */
  errors: (CheckpointError | RunStoreError)[]
}

/**
 * Retention for any `RunStore`: deletes the stored runs that are finished (or parked, when asked)
 * and were last saved before `before`, checkpoint and transcript. A run that may still be going on
 * (`running`, `waiting`) is never pruned, whatever its age: asking for it is a `ConfigError`.
 */
export async function pruneRuns(store: RunStore, options: PruneRunsOptions): Promise<PruneRunsResult> {
  const status = options.status ?? FINISHED_RUN_STATUSES
  const live = status.filter((s) => RESUMABLE_RUN_STATUSES.includes(s))
  if (live.length > 0) {
    throw new ConfigError(`Runs that may still be going on (${live.join(', ')}) are never pruned.`, { status: live })
  }
  if (!Number.isFinite(options.before)) throw new ConfigError('pruneRuns needs `before` (epoch ms).')
  const listing = await store.list({
    status,
    ...(options.agentId === undefined ? {} : { agentId: options.agentId }),
    signal: options.signal,
  })
  const result: PruneRunsResult = { pruned: [], errors: [...listing.errors] }
  for (const run of listing.runs) {
    if (run.checkpoint.savedAt >= options.before) continue
    options.signal.throwIfAborted()
    if (!options.dryRun) {
      try {
        await store.delete(run.checkpoint.runId, { signal: options.signal })
      } catch (error) {
        if (!RunStoreError.is(error)) throw error
        result.errors.push(error)
        continue
      }
    }
    result.pruned.push(run)
  }
  return result
}
