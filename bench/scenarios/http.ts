/**
 * Scenario (b): over HTTP against the scripted model server, one long run of 200 tool steps.
 * Like is compared with like: signalbox streaming against the openai-SDK loop streaming, and
 * signalbox with `stream: false` against the openai-SDK loop without streaming.
 */
import { measureInterleaved, type Variant } from '../lib/measure.ts'
import { buildRows, type Check, type Comparator, rowById, type Table } from '../lib/report.ts'
import { modelFor } from '../lib/workload.ts'
import { PEER_IDS, PEER_LABELS, peerRuns } from '../peers/index.ts'
import { HTTP_API_KEY, type HttpVariantOptions, httpLoopRunners } from './http-loops.ts'
import type { ScenarioOptions } from './options.ts'

export type { HttpVariantOptions } from './http-loops.ts'

export const HTTP_TARGET_RATIO = 1.1

/** The HTTP variants, as "one run" functions; the concurrency scenario reuses them. */
export function httpRunners(options: HttpVariantOptions) {
  const { url, steps, model = modelFor(steps) } = options
  return {
    ...httpLoopRunners(options),
    // The peers, streaming off (as each of them runs by default).
    ...peerRuns({ url, model, apiKey: HTTP_API_KEY, steps }),
  }
}

export const HTTP_LABELS = {
  fetch: 'bare loop, plain fetch (seed)',
  openai: 'bare loop, openai SDK',
  openaiStream: 'bare loop, openai SDK, streaming',
  signalbox: 'signalbox, stream: false',
  signalboxStream: 'signalbox, streaming',
  signalboxOnFetch: "signalbox, stream: false, on Node's fetch (undici)",
  signalboxHooks: 'signalbox, stream: false + 5 hooks',
  signalboxStreamHooks: 'signalbox, streaming + 5 hooks',
  floor: "the design's floor (signalbox's chart in XState, no signalbox)",
  floorStream: "the design's floor, streaming",
  floorHooks: "the design's floor + 5 hook points",
  floorStreamHooks: "the design's floor, streaming + 5 hook points",
  ...PEER_LABELS,
} as const

export const HTTP_COMPARATORS: Comparator = {
  signalbox: 'openai',
  signalboxHooks: 'openai',
  signalboxStream: 'openaiStream',
  signalboxOnFetch: 'openai',
  signalboxStreamHooks: 'openaiStream',
  floor: 'openai',
  floorStream: 'openaiStream',
  floorHooks: 'openai',
  floorStreamHooks: 'openaiStream',
  aiSdk: 'openai',
  openaiAgents: 'openai',
  langGraph: 'openai',
}

export async function httpLongRunScenario(url: string, steps: number, options: ScenarioOptions): Promise<Table> {
  const runners = httpRunners({ url, steps, withHooks: true })
  const order: (keyof typeof HTTP_LABELS)[] = [
    'fetch',
    'openai',
    'floor',
    'signalbox',
    'signalboxOnFetch',
    'floorHooks',
    'signalboxHooks',
    'openaiStream',
    'floorStream',
    'signalboxStream',
    'floorStreamHooks',
    'signalboxStreamHooks',
    ...PEER_IDS,
  ]
  const variants: Variant[] = order.map((id) => ({ id, label: HTTP_LABELS[id], run: runners[id]! }))
  const measured = await measureInterleaved(variants, {
    rounds: options.rounds,
    warmup: options.warmup,
    warmupMs: options.warmupMs ?? 0,
    minSampleMs: 0,
    onSample: options.progress,
  })
  const rows = buildRows(measured, 'us-per-step', 'fetch', HTTP_COMPARATORS)
  const ratio = (id: string) => rowById(rows, id).vsComparator?.ratio ?? Number.NaN
  const check = (id: string, floor: string, name: string): Check => ({
    name,
    value: ratio(id),
    unit: 'x',
    target: `≤ ${HTTP_TARGET_RATIO.toFixed(2)}x`,
    pass: ratio(id) <= HTTP_TARGET_RATIO,
    cpuValue: rowById(rows, id).cpu?.ratio ?? Number.NaN,
    floorValue: ratio(floor),
  })
  return {
    id: `http-${steps}`,
    title: `(b) Over HTTP (scripted model server): one run of ${steps} tool steps`,
    note: `Per tool step, median of ${options.rounds} interleaved rounds (one run per sample). "like-for-like" is signalbox (or a peer framework, streaming off) over the openai-SDK loop with the same streaming mode.`,
    metric: 'us-per-step',
    baseline: 'fetch',
    rows,
    checks: [
      check('signalbox', 'floor', 'signalbox stream:false vs openai-SDK loop'),
      check('signalboxStream', 'floorStream', 'signalbox streaming vs openai-SDK loop streaming'),
      check('signalboxHooks', 'floorHooks', 'signalbox stream:false + 5 hooks vs openai-SDK loop'),
      check('signalboxStreamHooks', 'floorStreamHooks', 'signalbox streaming + 5 hooks vs openai-SDK loop streaming'),
    ],
  }
}
