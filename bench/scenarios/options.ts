export interface ScenarioOptions {
  quick: boolean
  rounds: number
  warmup: number
  /** Called after every timed sample (progress). */
  progress: () => void
}
