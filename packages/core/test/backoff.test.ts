import { describe, expect, it } from 'vitest'
import { backoffDelay } from '../src/backoff.ts'

describe('backoffDelay', () => {
  it('doubles from the base delay and stops at the maximum', () => {
    const policy = { baseDelayMs: 500, maxDelayMs: 8_000, jitter: false }
    expect([1, 2, 3, 4, 5, 6].map((attempt) => backoffDelay(attempt, policy))).toEqual([500, 1_000, 2_000, 4_000, 8_000, 8_000])
  })

  it('is unbounded without a maximum', () => {
    expect(backoffDelay(11, { baseDelayMs: 1, jitter: false })).toBe(1_024)
  })

  it('spreads a jittered wait over the upper half of its ceiling', () => {
    const policy = { baseDelayMs: 500, maxDelayMs: 8_000 }
    expect(backoffDelay(3, policy, () => 0)).toBe(1_000)
    expect(backoffDelay(3, policy, () => 0.5)).toBe(1_500)
    expect(backoffDelay(3, policy, () => 0.999_999)).toBe(2_000)
  })

  it('treats an attempt below 1 as the first', () => {
    expect(backoffDelay(0, { baseDelayMs: 100, jitter: false })).toBe(100)
  })
})
