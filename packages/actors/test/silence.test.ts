import type { Clock } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { watchSilence } from '../src/silence.ts'

/** A clock whose timers fire only when told: `run(ms)` moves time on and fires what is due, in order; `stall(ms)` moves it on in one jump (a blocked event loop), then fires. */
function handClock() {
  let now = 0
  let timers: { at: number; fn: () => void }[] = []
  const fireDue = () => {
    for (;;) {
      const due = timers.filter((timer) => timer.at <= now).sort((a, b) => a.at - b.at)[0]
      if (!due) return
      timers = timers.filter((timer) => timer !== due)
      due.fn()
    }
  }
  const clock: Clock = {
    now: () => now,
    setTimeout: (fn, ms) => {
      const timer = { at: now + ms, fn: fn as () => void }
      timers.push(timer)
      return timer
    },
    clearTimeout: (id) => {
      timers = timers.filter((timer) => timer !== id)
    },
  }
  return {
    clock,
    run(ms: number) {
      const end = now + ms
      for (;;) {
        const next = timers
          .map((timer) => timer.at)
          .filter((at) => at <= end)
          .sort((a, b) => a - b)[0]
        if (next === undefined) break
        now = next
        fireDue()
      }
      now = end
    },
    stall(ms: number) {
      now += ms
      fireDue()
    },
  }
}

describe('watchSilence', () => {
  it('calls a party silent after the limit, once, and not while it is heard', () => {
    const { clock, run } = handClock()
    const silences: number[] = []
    const watch = watchSilence(clock, { limitMs: 300, recheckMs: 100 }, (ms) => silences.push(ms))
    for (let i = 0; i < 10; i++) {
      run(100)
      watch.heard()
    }
    expect(silences).toEqual([])
    run(1_000)
    expect(silences).toEqual([300])
  })

  it('after its own stall, looks again a recheck later instead of judging at once', () => {
    const { clock, run, stall } = handClock()
    const silences: number[] = []
    const watch = watchSilence(clock, { limitMs: 300, recheckMs: 100 }, (ms) => silences.push(ms))
    stall(2_000)
    expect(silences).toEqual([])
    // The heartbeat that was in flight during the stall arrives: still alive.
    watch.heard()
    run(250)
    expect(silences).toEqual([])
    // Nothing more is heard: silent after the limit, judged on time.
    run(400)
    expect(silences).toEqual([300])
  })

  it('a stalled watcher still calls a dead party silent, one recheck later', () => {
    const { clock, run, stall } = handClock()
    const silences: number[] = []
    watchSilence(clock, { limitMs: 300, recheckMs: 100 }, (ms) => silences.push(ms))
    stall(2_000)
    expect(silences).toEqual([])
    run(100)
    expect(silences).toEqual([2_100])
  })

  it('with confirmMs, a stall that ends just before the limit: what the party sent during it is read before any verdict', () => {
    const { clock, run, stall } = handClock()
    const silences: number[] = []
    const watch = watchSilence(clock, { limitMs: 300, recheckMs: 100, confirmMs: 50 }, (ms) => silences.push(ms))
    run(50)
    // Deaf from 50 to 320: the look due at 300 fires only 20 ms late, so lateness does not reveal the stall.
    stall(270)
    expect(silences).toEqual([])
    // The heartbeat sent during the stall, read after the timers (I/O comes next).
    watch.heard()
    run(200)
    expect(silences).toEqual([])
    // Nothing more is heard: found silent at 620, confirmed 50 ms later.
    run(1_000)
    expect(silences).toEqual([350])
  })

  it('stop() ends the watch', () => {
    const { clock, run } = handClock()
    const silences: number[] = []
    watchSilence(clock, { limitMs: 300, recheckMs: 100 }, (ms) => silences.push(ms)).stop()
    run(1_000)
    expect(silences).toEqual([])
  })
})
