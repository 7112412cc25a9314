/** What every peer's run must show, or the bench fails: the final answer and the exact tool count. */
import { FINAL_ANSWER } from '../lib/workload.ts'

/** Counts this run's tool executions; each peer threads it through its own per-run context. */
export interface RunCounter {
  executed: number
}

export function checkedRun(peer: string, steps: number, answer: unknown, counter: RunCounter): number {
  if (answer !== FINAL_ANSWER) throw new Error(`${peer}: run ended with ${JSON.stringify(answer)}, not "${FINAL_ANSWER}"`)
  if (counter.executed !== steps) throw new Error(`${peer}: expected ${steps} tool executions, ran ${counter.executed}`)
  return counter.executed
}
