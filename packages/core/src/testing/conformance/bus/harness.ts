/** What the Bus conformance tests share: a fresh bus per test, and waiting for what it does. */
import type { Bus } from '../../../bus/bus.ts'
import type { Subjects } from '../../../bus/subjects.ts'

/** Opens a bus for one test, on its own subject prefix (closed after the test). */
export type OpenBus = () => Promise<{ bus: Bus; subjects: Subjects; agent: string }>

/** Polls `predicate` until true; fails with `what` after `timeoutMs`. */
export async function eventually(predicate: () => boolean, what: string, timeoutMs = 3_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for: ${what}`)
    await sleep(5)
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** Rejection of `promise`, failing the test if it resolves. */
export async function rejectionOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection, but the promise resolved')
}

export function thrownBy(fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw, but the call returned')
}
