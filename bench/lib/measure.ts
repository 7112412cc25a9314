/**
 * Timing: warm every variant up, then run them interleaved (ABCD, BCDA, CDAB...) for several
 * rounds so drift on a busy machine lands on every variant alike; keep medians.
 */
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'

/** `global.gc` without `--expose-gc`: set the flag, then fetch `gc` from a fresh context. */
export const gc: (() => void) | undefined = (() => {
  const existing = (globalThis as { gc?: () => void }).gc
  if (existing) return existing
  try {
    setFlagsFromString('--expose-gc')
    return runInNewContext('gc') as () => void
  } catch {
    return undefined
  }
})()

export function fullGc(): void {
  if (!gc) return
  gc()
  gc()
}

export interface Variant {
  /** Stable key for JSON output. */
  id: string
  label: string
  /** One unit of work (a run, or a batch of concurrent runs); resolves to the tool steps it did. */
  run: () => Promise<number>
}

export interface Sample {
  /** Wall time. */
  ns: number
  /** CPU time of this process (user + system, all threads: GC helpers included). */
  cpuNs: number
  steps: number
  /** Units of work timed together. */
  reps: number
}

export interface MeasureOptions {
  rounds: number
  /** Untimed runs per variant before the first round (at least 1). */
  warmup: number
  /** ...and keep warming up until this much time has passed. */
  warmupMs?: number
  /** Each sample repeats the unit of work until it is about this long (keeps timer and scheduler noise small). */
  minSampleMs: number
  maxReps?: number
  /** Called after each sample (progress dots). */
  onSample?: () => void
}

export interface Measured {
  variant: Variant
  samples: Sample[]
}

const now = () => process.hrtime.bigint()

async function timeReps(variant: Variant, reps: number): Promise<Sample> {
  let steps = 0
  const cpu = process.cpuUsage()
  const start = now()
  for (let i = 0; i < reps; i++) steps += await variant.run()
  const ns = Number(now() - start)
  const used = process.cpuUsage(cpu)
  return { ns, cpuNs: (used.user + used.system) * 1000, steps, reps }
}

export async function measureInterleaved(variants: Variant[], options: MeasureOptions): Promise<Measured[]> {
  const reps = new Map<Variant, number>()
  // Warm-up (JIT, connection pools, caches), and size each sample from the last warm-up run.
  for (const variant of variants) {
    let last: Sample | undefined
    // At least `warmup` runs and `warmupMs` of work: XState's code takes a few hundred ms of
    // running before V8 has optimized it (first runs are 2-3x slower).
    const until = process.hrtime.bigint() + BigInt(Math.round((options.warmupMs ?? 0) * 1e6))
    for (let i = 0; i < Math.max(1, options.warmup) || process.hrtime.bigint() < until; i++) last = await timeReps(variant, 1)
    const unitMs = (last?.ns ?? 1e6) / 1e6
    reps.set(variant, Math.max(1, Math.min(options.maxReps ?? 1000, Math.ceil(options.minSampleMs / Math.max(unitMs, 1e-3)))))
  }
  const results = variants.map((variant): Measured => ({ variant, samples: [] }))
  for (let round = 0; round < options.rounds; round++) {
    for (let k = 0; k < results.length; k++) {
      const entry = results[(k + round) % results.length]!
      // No forced GC between samples: V8 answers one by shrinking the young generation, and the
      // next samples of allocation-heavy code (signalbox) run ~1.5-2x slower while it regrows.
      entry.samples.push(await timeReps(entry.variant, reps.get(entry.variant) ?? 1))
      options.onSample?.()
    }
  }
  return results
}

export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** Interquartile range relative to the median, in percent: how noisy the rounds were. */
export function spreadPercent(values: number[]): number {
  if (values.length < 3) return 0
  const sorted = [...values].sort((a, b) => a - b)
  const q = (p: number) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(p * (sorted.length - 1))))]!
  return (100 * (q(0.75) - q(0.25))) / median(values)
}

/** Nanoseconds per tool step, one value per round. */
export const nsPerStep = (m: Measured): number[] => m.samples.map((s) => s.ns / s.steps)
/** CPU nanoseconds of this process per tool step, one value per round. */
export const cpuNsPerStep = (m: Measured): number[] => m.samples.map((s) => s.cpuNs / s.steps)
/** Tool steps per second, one value per round. */
export const stepsPerSecond = (m: Measured): number[] => m.samples.map((s) => (s.steps * 1e9) / s.ns)
