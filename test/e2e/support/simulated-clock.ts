import { createRequire } from 'node:module'
import type { Clock } from '@signalbox/core'

/** XState's `SimulatedClock`: time only moves when the test moves it. */
export interface SimulatedClock extends Clock {
  increment(ms: number): void
  set(ms: number): void
}

// xstate is a dependency of @signalbox/core, not of the test package (and core does not re-export
// SimulatedClock), so load it the way core resolves it.
const requireFromCore = createRequire(new URL('../../../packages/core/package.json', import.meta.url))
const xstate = requireFromCore('xstate') as { SimulatedClock: new () => SimulatedClock }

export function createSimulatedClock(): SimulatedClock {
  return new xstate.SimulatedClock()
}
