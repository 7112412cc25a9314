/**
 * Scenario (c): many agents at once. N runs of M tool steps start together (one agent definition,
 * N runs in flight, as N copies of the bare loop share one client); throughput in tool steps/s.
 */
import { measureInterleaved, type Variant } from '../lib/measure.ts'
import { buildRows, rowById, type Table } from '../lib/report.ts'
import { PEER_IDS } from '../peers/index.ts'
import { HTTP_COMPARATORS, HTTP_LABELS, httpRunners } from './http.ts'
import { inProcessVariants } from './in-process.ts'
import type { ScenarioOptions } from './options.ts'

/** Targets: 1,000 in-process runs at once; 200 runs over HTTP against the openai-SDK loop. */
export const IN_PROCESS_THROUGHPUT_TARGET = 15_000
export const HTTP_THROUGHPUT_TARGET = 0.9

function concurrently(runs: number, one: () => Promise<number>): () => Promise<number> {
  return async () => {
    const all: Promise<number>[] = []
    for (let i = 0; i < runs; i++) all.push(one())
    let steps = 0
    for (const ran of await Promise.all(all)) steps += ran
    return steps
  }
}

export async function httpConcurrencyScenario(
  url: string,
  runs: number,
  steps: number,
  options: ScenarioOptions,
): Promise<Table> {
  const runners = httpRunners({ url, steps, withHooks: false })
  const order = [
    'fetch',
    'openai',
    'floor',
    'signalbox',
    'signalboxOnFetch',
    'openaiStream',
    'floorStream',
    'signalboxStream',
    ...PEER_IDS,
  ] as const
  const variants: Variant[] = order.map((id) => ({ id, label: HTTP_LABELS[id], run: concurrently(runs, runners[id]) }))
  const measured = await measureInterleaved(variants, {
    rounds: options.rounds,
    warmup: options.warmup,
    warmupMs: options.warmupMs ?? 0,
    minSampleMs: 0,
    onSample: options.progress,
  })
  const rows = buildRows(measured, 'steps-per-second', 'fetch', HTTP_COMPARATORS)
  const ratio = rowById(rows, 'signalbox').median / rowById(rows, 'openai').median
  const floorRatio = rowById(rows, 'floor').median / rowById(rows, 'openai').median
  return {
    id: `http-concurrent-${runs}`,
    title: `(c) Over HTTP, ${runs} concurrent runs of ${steps} tool steps`,
    note: `Throughput (higher is better), median of ${options.rounds} interleaved rounds; ${runs * steps} tool steps per sample. Ratios below 1 mean fewer steps per second than the baseline.`,
    metric: 'steps-per-second',
    baseline: 'fetch',
    rows,
    checks:
      runs >= 200
        ? [
            {
              name: `signalbox stream:false vs openai-SDK loop, ${runs} runs at once (throughput ratio)`,
              value: ratio,
              unit: 'x',
              target: `≥ ${HTTP_THROUGHPUT_TARGET.toFixed(2)}x`,
              pass: ratio >= HTTP_THROUGHPUT_TARGET,
              // CPU per step the other way round: as a throughput ratio, comparable with the target.
              cpuValue: 1 / (rowById(rows, 'signalbox').cpu?.ratio ?? Number.NaN),
              floorValue: floorRatio,
            },
          ]
        : [],
  }
}

export async function inProcessConcurrencyScenario(runs: number, steps: number, options: ScenarioOptions): Promise<Table> {
  // The hooked variants are left out here: their cost per step is in the sequential tables.
  const variants = inProcessVariants(steps)
    .filter((v) => v.id === 'bare' || v.id === 'bare-provider' || v.id === 'signalbox')
    .map((v) => ({ ...v, run: concurrently(runs, v.run) }))
  const measured = await measureInterleaved(variants, {
    rounds: options.rounds,
    warmup: options.warmup,
    warmupMs: options.warmupMs ?? 0,
    minSampleMs: options.quick ? 20 : 100,
    onSample: options.progress,
  })
  const rows = buildRows(measured, 'steps-per-second', 'bare', { signalbox: 'bare-provider' })
  const rate = rowById(rows, 'signalbox').median
  return {
    id: `in-process-concurrent-${runs}`,
    title: `(c) In-process, ${runs} concurrent runs of ${steps} tool steps`,
    note: `Throughput (higher is better), median of ${options.rounds} interleaved rounds; ${runs * steps} tool steps per batch.`,
    metric: 'steps-per-second',
    baseline: 'bare',
    rows,
    checks: [
      {
        name: `signalbox, ${runs} in-process runs at once`,
        value: rate,
        unit: 'steps/s',
        target: `≥ ${IN_PROCESS_THROUGHPUT_TARGET.toLocaleString('en-US')} steps/s`,
        pass: rate >= IN_PROCESS_THROUGHPUT_TARGET,
      },
    ],
  }
}
