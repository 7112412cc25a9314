/** `whenAborted`: many waiters on one signal share one listener, each removed on its own. */
import { getEventListeners } from 'node:events'
import { whenAborted } from '@signalbox/core/internal'
import { describe, expect, it } from 'vitest'

describe('whenAborted', () => {
  it('one listener for any number of waiters; removing them all leaves none; the rest are called once on abort', () => {
    const controller = new AbortController()
    const called: number[] = []
    const stops = Array.from({ length: 50 }, (_, i) => whenAborted(controller.signal, () => called.push(i)))
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    for (const stop of stops.slice(0, 48)) stop()
    stops[0]?.()
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    controller.abort()
    expect(called).toEqual([48, 49])
    stops[49]?.()
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  })

  it('all removed, then a new waiter: a fresh listener, and an old stop does not remove it', () => {
    const controller = new AbortController()
    const first = whenAborted(controller.signal, () => {})
    first()
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    let calls = 0
    whenAborted(controller.signal, () => calls++)
    first()
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
    controller.abort()
    expect(calls).toBe(1)
  })

  it('an aborted signal calls at once and keeps nothing; the same function given twice is removed one at a time', () => {
    const aborted = AbortSignal.abort()
    let calls = 0
    whenAborted(aborted, () => calls++)
    expect(calls).toBe(1)
    expect(getEventListeners(aborted, 'abort')).toHaveLength(0)
    const controller = new AbortController()
    const twice = () => calls++
    whenAborted(controller.signal, twice)
    const stopSecond = whenAborted(controller.signal, twice)
    stopSecond()
    controller.abort()
    expect(calls).toBe(2)
  })
})
