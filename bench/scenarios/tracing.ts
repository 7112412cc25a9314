/**
 * What OpenTelemetry tracing costs per tool step, in process (no HTTP). The same agent
 * untraced, with `traceAgent` called but no tracer provider registered (must be the same: nothing
 * is attached), and traced by the real SDK into an in-memory exporter (a run, a turn, a model call
 * and a tool call span per step; with hooks, a span per hook as well).
 */

import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { ScriptedProvider } from '@signalbox/core/testing'
import { traceAgent } from '@signalbox/otel'
import { measureInterleaved, type Variant } from '../lib/measure.ts'
import { buildRows, type Check, rowById, type Table } from '../lib/report.ts'
import { benchAgent, runAgent } from '../lib/signalbox.ts'
import { modelFor, responder } from '../lib/workload.ts'
import type { ScenarioOptions } from './options.ts'

/** Tracing on may cost at most this many times the untraced step (spans are real work, kept in memory). */
export const TRACING_ON_MAX_RATIO = 3
/** Tracing attached without a provider must cost nothing: within noise of the untraced agent. */
export const TRACING_OFF_MAX_RATIO = 1.1

export async function tracingScenario(steps: number, options: ScenarioOptions): Promise<Table> {
  const model = modelFor(steps)
  const provider = new ScriptedProvider({ script: responder, model, record: false })
  const exporter = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })

  const plain = benchAgent(provider, false)
  const noProvider = benchAgent(provider, false)
  traceAgent(noProvider) // no global provider is registered in the bench: attaches nothing
  const traced = benchAgent(provider, false)
  traceAgent(traced, { tracerProvider })
  const hooks = benchAgent(provider, true)
  const tracedHooks = benchAgent(provider, true)
  traceAgent(tracedHooks, { tracerProvider })

  const spansPerRun: number[] = []
  const run = async (agent: typeof plain, expectSpans: boolean) => {
    const ran = await runAgent(agent)
    if (ran !== steps) throw new Error(`expected ${steps} tool steps, ran ${ran}`)
    if (expectSpans) {
      spansPerRun.push(exporter.getFinishedSpans().length)
      exporter.reset()
    }
    return ran
  }
  const variants: Variant[] = [
    { id: 'off', label: 'signalbox, untraced', run: () => run(plain, false) },
    { id: 'no-provider', label: 'traceAgent, no tracer provider registered', run: () => run(noProvider, false) },
    { id: 'on', label: 'traced (SDK, in-memory exporter)', run: () => run(traced, true) },
    { id: 'hooks-off', label: 'signalbox + 5 no-op hooks, untraced', run: () => run(hooks, false) },
    { id: 'hooks-on', label: '+ 5 no-op hooks, traced (a span per hook)', run: () => run(tracedHooks, true) },
  ]
  const measured = await measureInterleaved(variants, {
    rounds: options.rounds,
    warmup: options.warmup,
    warmupMs: options.warmupMs ?? 0,
    minSampleMs: options.quick ? 20 : 60,
    onSample: options.progress,
  })
  const rows = buildRows(measured, 'us-per-step', 'off', { 'no-provider': 'off', on: 'off', 'hooks-on': 'hooks-off' })
  const ratio = (id: string, base: string) => rowById(rows, id).median / rowById(rows, base).median
  const cpuRatio = (id: string) => rowById(rows, id).cpu?.ratio ?? Number.NaN
  const checks: Check[] = [
    {
      name: 'tracing attached, no provider: cost per tool step vs untraced',
      value: ratio('no-provider', 'off'),
      unit: 'x',
      target: `< ${TRACING_OFF_MAX_RATIO}x`,
      pass: ratio('no-provider', 'off') < TRACING_OFF_MAX_RATIO,
      cpuValue: cpuRatio('no-provider'),
    },
    {
      name: 'tracing on (in-memory exporter): cost per tool step vs untraced',
      value: ratio('on', 'off'),
      unit: 'x',
      target: `< ${TRACING_ON_MAX_RATIO}x`,
      pass: ratio('on', 'off') < TRACING_ON_MAX_RATIO,
      cpuValue: cpuRatio('on'),
    },
    {
      name: 'tracing on with 5 hooks: cost per tool step vs the same untraced',
      value: ratio('hooks-on', 'hooks-off'),
      unit: 'x',
      target: `< ${TRACING_ON_MAX_RATIO * 2}x`,
      pass: ratio('hooks-on', 'hooks-off') < TRACING_ON_MAX_RATIO * 2,
      cpuValue: cpuRatio('hooks-on'),
    },
  ]
  return {
    id: `tracing-${steps}`,
    title: `Tracing: one run of ${steps} tool steps, in process`,
    note: `Per tool step, median of ${options.rounds} interleaved rounds; ratios against the same agent untraced. Traced runs export every span to an in-memory exporter (emptied after each run); spans per traced run: ${[...new Set(spansPerRun)].join(' (no hooks), ')} (5 hooks). The CPU columns are steadier than wall time on a busy machine.`,
    metric: 'us-per-step',
    baseline: 'off',
    rows,
    checks,
    extra: { spansPerRun: [...new Set(spansPerRun)] },
  }
}
