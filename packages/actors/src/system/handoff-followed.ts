/**
 * The stored mark of a hand-off: the run that handed over stays `pending` until the next agent's
 * run exists, so that a host taking the run over follows the hand-off only when nobody did.
 */
import type { Clock } from '@signalbox/core'
import { sleep } from '@signalbox/core/internal'
import type { RunStore } from '@signalbox/core/store'

export interface HandoffStore {
  store: RunStore
  clock: Clock
  /** The system is closing: stop writing and waiting. */
  stopping: AbortSignal
}

/**
 * The next agent's run of a hand-off exists now: the run that handed over is no longer pending
 * (a host taking over would otherwise follow it again; it would find the same run by its id).
 */
export async function markHandoffFollowed(runId: string, { store, clock, stopping }: HandoffStore): Promise<void> {
  const signal = AbortSignal.any([stopping, AbortSignal.timeout(10_000)])
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const stored = await store.load(runId, { signal })
      const handoff = stored?.checkpoint.handoff
      if (stored === undefined || handoff?.pending !== true) return
      const { lease: _lease, ...rest } = stored.checkpoint
      const checkpoint = { ...rest, handoff: { ...handoff, pending: false }, savedAt: clock.now() }
      await store.save(checkpoint, { revision: stored.revision, signal })
      return
    } catch {
      // Written meanwhile (a host claimed it to follow it too), or the store failed: read again.
      // Left pending, whoever follows it finds the next run by its id.
      if (stopping.aborted) return
    }
  }
}

/** Resolves once the run's first checkpoint is in the store (or it ended, or the store never shows it). */
export async function whenStored(
  runId: string,
  ended: Promise<unknown>,
  { store, clock, stopping }: HandoffStore,
): Promise<void> {
  let over = false
  void ended.then(
    () => (over = true),
    () => (over = true),
  )
  const until = clock.now() + 10_000
  while (!over && clock.now() < until && !stopping.aborted) {
    const stored = await store.load(runId, { signal: stopping }).catch(() => undefined)
    if (stored !== undefined) return
    await sleep(20, { clock, signal: stopping }).catch(() => {})
  }
}
