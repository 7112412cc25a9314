/**
 * A parent that runs a delegate call again (after a crash) looking for a child that ran in its own
 * process: still running here (resumed by this host's takeover), or stored and resumable (its
 * process died with the parent's), or stored and finished. Each stored run is resumed by one owner
 * at a time, so a child claimed meanwhile by a takeover scan shows up among the agent's runs.
 */
import { type Agent, type Clock, ConfigError, type RunHandle, type RunResult } from '@signalbox/core'
import { isFinished, sleep } from '@signalbox/core/internal'
import { type RunStore, RunStoreError } from '@signalbox/core/store'
import { ChildRunError } from './child-run-error.ts'

export interface LocalReattachOptions {
  /** The store of the system's runs (to read a finished child's answer). */
  store: RunStore | undefined
  clock: Clock
  /** How long a child being claimed elsewhere may take to show up here. */
  lostAfterMs: number
  signal?: AbortSignal | undefined
  /** The child was found running here: its parent is local (no heartbeats, no lease). */
  attached(runId: string): void
}

/** The child's result (`undefined`: it is nowhere, it never started or died with no store). */
export async function findLocalRun(
  agent: Agent<any>,
  runId: string,
  options: LocalReattachOptions,
): Promise<Promise<RunResult<unknown>> | undefined> {
  const { clock, signal } = options
  const until = clock.now() + options.lostAfterMs
  for (;;) {
    const running = agent.runs.get(runId) as RunHandle<unknown> | undefined
    if (running) {
      options.attached(runId)
      return running.result
    }
    try {
      const resumed = (await agent.resume(runId, signal ? { signal } : {})) as RunHandle<unknown>
      return resumed.result
    } catch (error) {
      // No store: a local child dies with its process.
      if (ConfigError.is(error) || RunStoreError.is(error, 'RUN_NOT_FOUND')) return undefined
      const finished = await finishedResult(options.store, runId, signal)
      if (finished) return Promise.resolve(finished)
      // Being claimed (a takeover scan, an owner whose lease is not out yet): look again.
      if (clock.now() >= until) throw error
      await sleep(100, { clock, ...(signal ? { signal } : {}) })
    }
  }
}

/** A finished stored run's answer: the last assistant message of its transcript (`undefined` if not finished). */
export async function storedAnswer(store: RunStore, runId: string, signal: AbortSignal): Promise<RunResult<unknown> | undefined> {
  const stored = await store.load(runId, { signal })
  if (stored === undefined || !isFinished(stored.checkpoint.status)) return undefined
  const { checkpoint } = stored
  const messages = await store.readMessages(runId, { length: checkpoint.transcript.length, signal })
  const answer = [...messages].reverse().find((message) => message.role === 'assistant')
  const done = checkpoint.status === 'done'
  return {
    runId,
    status: checkpoint.status as RunResult['status'],
    output: done && typeof answer?.content === 'string' ? answer.content : '',
    stopReason: done ? 'final_answer' : undefined,
    error: done ? undefined : { code: 'CHILD_FAILED', message: `The run ended ${checkpoint.status}.` },
    turns: 0,
    usage: checkpoint.usage,
    messages,
    pendingSteering: [],
  }
}

/** A finished stored child's answer, as the parent's call reads it (a failed one is an error). */
async function finishedResult(
  store: RunStore | undefined,
  runId: string,
  signal: AbortSignal | undefined,
): Promise<RunResult<unknown> | undefined> {
  if (store === undefined) return undefined
  const result = await storedAnswer(store, runId, signal ?? new AbortController().signal)
  if (result === undefined || result.status === 'done') return result
  throw new ChildRunError('CHILD_FAILED', `The child run ${runId} ended ${result.status} while its parent was down.`, {
    runId,
    status: result.status,
  })
}
