export interface ScenarioOptions {
  quick: boolean
  rounds: number
  warmup: number
  /** Minimum warm-up time per variant, in ms (on top of `warmup` runs). */
  warmupMs?: number
  /** Called after every timed sample (progress). */
  progress: () => void
}
