import { describe, expect, it } from 'vitest'
import { SimulatedClock } from 'xstate'
import { IdempotencyCache } from '../../src/store/index.ts'

function deferred<T>() {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('IdempotencyCache', () => {
  it('runs the work once per key and replays its result to a retry', async () => {
    const cache = new IdempotencyCache<string>()
    let runs = 0
    const work = async () => `result ${++runs}`
    const first = cache.run('run_1:call_a', work)
    expect(first.replayed).toBe(false)
    expect(await first.promise).toBe('result 1')
    const retry = cache.run('run_1:call_a', work)
    expect(retry.replayed).toBe(true)
    expect(await retry.promise).toBe('result 1')
    expect(await cache.run('run_1:call_b', work).promise).toBe('result 2')
    expect(runs).toBe(2)
    expect(cache.replays).toBe(1)
  })

  it('lets a duplicate that arrives while the first call runs share its promise', async () => {
    const cache = new IdempotencyCache<string>()
    const gate = deferred<string>()
    let runs = 0
    const work = () => {
      runs++
      return gate.promise
    }
    const first = cache.run('k', work)
    const duplicate = cache.run('k', work)
    expect(duplicate.replayed).toBe(true)
    expect(duplicate.promise).toBe(first.promise)
    gate.resolve('once')
    expect(await Promise.all([first.promise, duplicate.promise])).toEqual(['once', 'once'])
    expect(runs).toBe(1)
  })

  it('replays a failure too (a failed tool may have had an effect), sync throws included', async () => {
    const cache = new IdempotencyCache<string>()
    let runs = 0
    const failing = () => {
      runs++
      throw new Error('disk full')
    }
    await expect(cache.run('k', failing).promise).rejects.toThrow('disk full')
    await expect(cache.run('k', failing).promise).rejects.toThrow('disk full')
    expect(runs).toBe(1)
  })

  it('forgets a settled result after ttlMs on its clock, never a running one', async () => {
    const clock = new SimulatedClock()
    const cache = new IdempotencyCache<number>({ ttlMs: 1_000, clock })
    let runs = 0
    const gate = deferred<number>()
    cache.run('slow', () => gate.promise)
    await cache.run('fast', async () => ++runs).promise
    await settle()
    clock.increment(999)
    expect(await cache.run('fast', async () => ++runs).promise).toBe(1)
    clock.increment(1)
    expect(await cache.run('fast', async () => ++runs).promise).toBe(2)
    clock.increment(60_000)
    expect(cache.run('slow', async () => -1).replayed).toBe(true)
  })

  it('keeps at most maxEntries settled results, dropping the oldest, and never evicts a running call', async () => {
    const cache = new IdempotencyCache<string>({ maxEntries: 2 })
    const gate = deferred<string>()
    cache.run('running', () => gate.promise)
    for (const key of ['a', 'b', 'c']) await cache.run(key, async () => key).promise
    await settle()
    expect(cache.run('running', async () => 'again').replayed).toBe(true)
    expect(cache.run('c', async () => 'again').replayed).toBe(true)
    expect(cache.run('a', async () => 'again').replayed).toBe(false)
    expect(cache.size).toBeLessThanOrEqual(3)
  })

  it('refuses an empty key and bad bounds with clear errors', () => {
    expect(() => new IdempotencyCache({ maxEntries: 0 })).toThrow('maxEntries must be a positive integer')
    expect(() => new IdempotencyCache({ ttlMs: -5 })).toThrow('ttlMs must be positive')
    expect(() => new IdempotencyCache<string>().run('', async () => 'x')).toThrow('the idempotency key is empty')
  })
})
