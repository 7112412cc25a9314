/**
 * What a finished run leaves behind through V8's young-generation collections
 * (`bench/young-retention.ts`, on the built packages). XState keeps every dropped machine actor
 * alive until the next full GC (its last snapshot with it: the design's floor leaves ~3 KiB a
 * 20-step run); signalbox must add nothing that drags more of the run along. Its run binding used
 * to be a WeakMap entry whose value led back to its key: V8's young collections keep such an
 * entry, and every finished hooked run then left 19-23 KiB more than the floor (~7 now).
 */
import { expect, it } from 'vitest'
import { youngRetention } from './young-retention-run.ts'

it('a finished run leaves little more behind through young collections than the design floor does', async () => {
  const kept = await youngRetention(['dropped-graph,floor-hooks,signalbox-hooks', '--batches', '7'], AbortSignal.timeout(100_000))
  // The probe itself: 4,000 messages made and dropped leave nothing.
  expect(kept['dropped-graph']).toBeLessThan(1)
  expect(kept['floor-hooks']).toBeGreaterThan(0)
  // 20 tool steps, five hooks: ~7 KiB over the floor now, 19-23 with the WeakMap binding.
  expect((kept['signalbox-hooks'] as number) - (kept['floor-hooks'] as number)).toBeLessThan(12)
}, 110_000)

it("a finished run's events do not outlive it through XState's microsteps, with V8's pretenuring on as users run it", async () => {
  // Each microstep, XState writes a recording closure into the actor's action executor; V8 makes
  // it old, and with it every action (its context and event) would survive the young collections,
  // then be allocated old from the start: 176-202 KiB a batch's run of 20 steps of 4 KiB results
  // without the pin; with the executor pinned (src/machine/pinned-executor.ts) 9-49, as V8's
  // other pretenuring decisions vary from process to process.
  const kept = await youngRetention(['signalbox-hooks-4k', '--pretenuring', '--batches', '7'], AbortSignal.timeout(100_000))
  expect(kept['signalbox-hooks-4k']).toBeGreaterThan(0)
  expect(kept['signalbox-hooks-4k']).toBeLessThan(100)
}, 110_000)
