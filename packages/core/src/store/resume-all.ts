import { asError } from '../errors.ts'
import type { CheckpointError, RunStoreError } from './errors.ts'
import type { RunStore } from './run-store.ts'

export interface ResumeOptions {
  signal?: AbortSignal
}

/** What `resumeAll()` did: the runs now going on, the runs another live owner holds, and the runs it could not read. */
export interface ResumeAllResult<H> {
  runs: H[]
  /** Leased by another owner whose lease has not expired. */
  skipped: { runId: string; owner: string; expiresAt: number }[]
  /** One per run that could not be resumed (each names its run); the others still resumed. */
  errors: (CheckpointError | RunStoreError | Error)[]
}

/**
 * `agent.resumeAll()`: every stored run of the agent that is not finished, not in flight here, and
 * not leased by another live owner is resumed, 16 at a time (each reads its transcript and claims
 * its lease). A run that cannot be read or resumed is reported in `errors`; the others go on.
 */
export async function resumeEvery<H>(options: {
  store: RunStore
  agentId: string
  owner: string
  now: number
  signal: AbortSignal
  isActive(runId: string): boolean
  resume(runId: string): Promise<H>
}): Promise<ResumeAllResult<H>> {
  const { store, signal } = options
  const listing = await store.list({ status: ['running', 'waiting'], agentId: options.agentId, signal })
  const result: ResumeAllResult<H> = { runs: [], skipped: [], errors: [...listing.errors] }
  const todo = listing.runs.filter(({ checkpoint }) => {
    const { lease } = checkpoint
    if (options.isActive(checkpoint.runId)) return false
    if (lease && lease.owner !== options.owner && lease.expiresAt > options.now) {
      result.skipped.push({ runId: checkpoint.runId, owner: lease.owner, expiresAt: lease.expiresAt })
      return false
    }
    return true
  })
  for (let i = 0; i < todo.length; i += 16) {
    const batch = todo.slice(i, i + 16)
    const settled = await Promise.allSettled(batch.map(({ checkpoint }) => options.resume(checkpoint.runId)))
    for (const outcome of settled) {
      if (outcome.status === 'fulfilled') result.runs.push(outcome.value)
      else result.errors.push(asError(outcome.reason))
    }
  }
  return result
}
