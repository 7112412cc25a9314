import { randomUUID } from 'node:crypto'

/** Identifiers are injected (tests use deterministic ones). */
export type IdGenerator = (kind: 'run' | 'request' | 'question') => string

export const randomIds: IdGenerator = (kind) => `${kind}_${randomUUID()}`

/** Deterministic ids for tests: `run_1`, `request_1`... */
export function sequentialIds(): IdGenerator {
  const counters = new Map<string, number>()
  return (kind) => {
    const next = (counters.get(kind) ?? 0) + 1
    counters.set(kind, next)
    return `${kind}_${next}`
  }
}
