/**
 * The enforcing host's memory of used approvals: one decision, one call; the same call gets the
 * first answer; an entry is kept while its decision could still be accepted and for a while after
 * its answer, and never forgotten while its call runs.
 */
import type { Clock } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { UsedApprovals } from '../../src/tools/used-approvals.ts'

function manualClock(start = 1_000_000) {
  let now = start
  const clock: Clock = { now: () => now, setTimeout: () => 0, clearTimeout: () => {} }
  return { clock, advance: (ms: number) => (now += ms) }
}

describe('UsedApprovals', () => {
  it('lets a decision run one call: the same call shares its answer, another call is told which one used it', async () => {
    const { clock } = manualClock()
    const used = new UsedApprovals<string>({ clock, retainMs: 60_000 })
    const first = used.claim('req-1', 'run-1:call-1', clock.now() + 30_000)
    expect(first.kind).toBe('first')
    const again = used.claim('req-1', 'run-1:call-1', clock.now() + 30_000)
    expect(used.claim('req-1', 'run-2:call-1', clock.now() + 30_000)).toEqual({ kind: 'other', identity: 'run-1:call-1' })
    if (first.kind !== 'first' || again.kind !== 'same') throw new Error('unexpected claims')
    first.settle('dropped into bin 3')
    first.settle('a second answer is ignored')
    expect(await again.answer).toBe('dropped into bin 3')
    // Another decision is another claim.
    expect(used.claim('req-2', 'run-1:call-1', clock.now() + 30_000).kind).toBe('first')
  })

  it('keeps an answered claim until the later of the decision’s validity and retainMs after the answer, then forgets it', () => {
    const { clock, advance } = manualClock()
    const used = new UsedApprovals<string>({ clock, retainMs: 10_000 })
    const long = used.claim('req-long', 'a', clock.now() + 60_000)
    const short = used.claim('req-short', 'b', clock.now() + 1_000)
    if (long.kind !== 'first' || short.kind !== 'first') throw new Error('unexpected claims')
    long.settle('x')
    short.settle('y')
    advance(30_000)
    // req-short: valid until +1 s, answered at 0, kept 10 s after: gone at +30 s. req-long: valid until +60 s.
    expect(used.claim('req-long', 'other', clock.now()).kind).toBe('other')
    expect(used.claim('req-short', 'other', clock.now()).kind).toBe('first')
    advance(30_001)
    expect(used.claim('req-long', 'other', clock.now()).kind).toBe('first')
  })

  it('never forgets a claim whose call still runs', () => {
    const { clock, advance } = manualClock()
    const used = new UsedApprovals<string>({ clock, retainMs: 1_000 })
    expect(used.claim('req-1', 'a', clock.now() + 1_000).kind).toBe('first')
    advance(24 * 3_600_000)
    expect(used.claim('req-1', 'b', clock.now()).kind).toBe('other')
    expect(used.size).toBe(1)
  })
})
