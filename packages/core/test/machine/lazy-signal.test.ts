import { describe, expect, it } from 'vitest'
import { withLazySignal } from '../../src/machine/lazy-signal.ts'

/** A source that counts how often its signal is read. */
function countingSource() {
  const signal = new AbortController().signal
  const source = {
    reads: 0,
    get signal() {
      source.reads++
      return signal
    },
  }
  return { source, signal }
}

describe('withLazySignal', () => {
  it('reads the signal from its source only when asked for it', () => {
    const { source, signal } = countingSource()
    const context = withLazySignal(source, { runId: 'r', turn: 2 })
    expect(context.runId).toBe('r')
    expect(context.turn).toBe(2)
    expect(source.reads).toBe(0)
    expect(context.signal).toBe(signal)
    expect(source.reads).toBe(1)
  })

  it('is an own, enumerable property: a spread copies it and the keys list it', () => {
    const { source, signal } = countingSource()
    const context = withLazySignal(source, { runId: 'r' })
    expect(Object.keys(context)).toEqual(['runId', 'signal'])
    expect(JSON.parse(JSON.stringify(context))).toEqual({ runId: 'r', signal: {} })
    const copy = { ...context }
    expect(Object.getOwnPropertyDescriptor(copy, 'signal')?.value).toBe(signal)
  })

  it('is read through a Proxy of the context (the getter is called with the proxy as `this`)', () => {
    const { source, signal } = countingSource()
    const context = withLazySignal(source, { runId: 'r' })
    const proxy = new Proxy(context, { get: (target, key, receiver) => Reflect.get(target, key, receiver) })
    expect(proxy.signal).toBe(signal)
  })

  it('reaches nothing of its source but the signal', () => {
    const { source } = countingSource()
    const context = withLazySignal(source, { runId: 'r' })
    const hidden = Object.getOwnPropertySymbols(context).map((key) => (context as unknown as Record<symbol, object>)[key])
    expect(hidden).toHaveLength(1)
    for (const value of hidden) expect(Reflect.ownKeys(value as object)).toEqual([])
  })
})
