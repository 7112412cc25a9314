import type { Actor, Snapshot } from 'xstate'
import type { Clock } from '../clock.ts'
import { deepFreeze } from '../events.ts'
import type { AgentMachine } from '../machine/agent-machine.ts'
import { isFinished } from '../run-status.ts'
import type { StoredRun } from './checkpoint.ts'
import { CheckpointError, RunStoreError } from './errors.ts'
import { parkRun, type RunStore } from './run-store.ts'
import { restoreTranscript } from './stored-snapshot.ts'

export interface RestoreRunOptions {
  store: RunStore
  runId: string
  /** The agent resuming it: a run of another agent is refused. */
  agentId: string
  /** Who takes the lease (the host's id), and for how long. */
  owner: string
  leaseMs: number
  clock: Clock
  /** Makes the run's actor from its restored machine snapshot (not started). */
  createActor: (snapshot: Snapshot<unknown>) => Actor<AgentMachine>
  signal: AbortSignal
}

/**
 * A stored run made ready to continue here: loaded, checked (this agent's, neither finished nor
 * parked), claimed (its lease taken at the revision read), its transcript read back and its machine
 * snapshot restored into an actor. A run whose stored state cannot be loaded would fail the same way
 * at every try: it is parked with why, once, and the error thrown.
 */
export async function restoreRun(options: RestoreRunOptions): Promise<{ actor: Actor<AgentMachine>; claimed: StoredRun }> {
  const { store, runId, signal } = options
  const loaded = await store.load(runId, { signal })
  if (loaded === undefined) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
  const stored = loaded.checkpoint
  if (stored.agentId !== options.agentId) {
    throw new RunStoreError('RUN_NOT_RESUMABLE', runId, `it belongs to agent "${stored.agentId}", not "${options.agentId}".`)
  }
  if (isFinished(stored.status)) throw new RunStoreError('RUN_NOT_RESUMABLE', runId, `it is finished (${stored.status}).`)
  if (stored.status === 'parked') {
    const why = stored.parked ? ` (${stored.parked.code}: ${stored.parked.message})` : ''
    throw new RunStoreError('RUN_NOT_RESUMABLE', runId, `it is parked: its stored state cannot be continued${why}.`)
  }
  const claimed = await store.claim(runId, { owner: options.owner, leaseMs: options.leaseMs, revision: loaded.revision, signal })
  try {
    const messages = await store.readMessages(runId, { length: claimed.checkpoint.transcript.length, signal })
    for (const message of messages) deepFreeze(message)
    try {
      return {
        actor: options.createActor(restoreTranscript(claimed.checkpoint.snapshot, messages) as Snapshot<unknown>),
        claimed,
      }
    } catch (cause) {
      throw new CheckpointError('CHECKPOINT_INVALID', runId, `the stored machine snapshot cannot be restored: ${String(cause)}`, {
        cause,
      })
    }
  } catch (error) {
    if (cannotBeLoaded(error)) {
      const reason = { code: error.code, message: error.message }
      await parkRun(store, claimed, { reason, by: options.owner, clock: options.clock, signal }).catch(() => {})
    }
    throw error
  }
}

/** A stored run whose state cannot be loaded (as opposed to a store that could not be reached, or a lost race). */
function cannotBeLoaded(error: unknown): error is CheckpointError | RunStoreError {
  return CheckpointError.is(error) || RunStoreError.is(error, 'RUN_TRANSCRIPT_GAP')
}
