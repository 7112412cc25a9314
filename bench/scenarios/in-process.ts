/**
 * Scenario (a): in-process, no HTTP. The scripted model answers at once, so the figure left is
 * the loop's own cost per tool step: signalbox's statechart versus the seed's loop.
 */
import { ScriptedProvider } from '@signalbox/core/testing'
import { providerChat, responderChat, runBareLoop } from '../lib/bare-loops.ts'
import { measureInterleaved, type Variant } from '../lib/measure.ts'
import { buildRows, type Check, rowById, type Table } from '../lib/report.ts'
import { benchAgent, runAgent } from '../lib/signalbox.ts'
import { modelFor, nextStep, noopHooks, PROMPT, responder } from '../lib/workload.ts'
import type { ScenarioOptions } from './options.ts'

/** The targets: the runtime's own cost per tool step, without hooks and with five no-op hooks. */
export const IN_PROCESS_TARGET_US = 60
export const IN_PROCESS_HOOKS_TARGET_US = 100

export function inProcessVariants(steps: number, options: { observed?: boolean } = {}): Variant[] {
  const model = modelFor(steps)
  const provider = new ScriptedProvider({ script: responder, model, record: false })
  const plain = benchAgent(provider, false)
  const hooked = benchAgent(provider, true)
  const observed = benchAgent(provider, false)
  // What the demo's trace, the CLI and the inspector do: listen to every event.
  observed.on('*', () => {})
  const direct = responderChat(model, nextStep)
  const viaProvider = providerChat(provider)
  const checked = (ran: number) => {
    if (ran !== steps) throw new Error(`expected ${steps} tool steps, ran ${ran}`)
    return ran
  }
  return [
    { id: 'bare', label: 'bare loop, responder called directly', run: async () => checked(await runBareLoop(direct, PROMPT)) },
    {
      id: 'bare-hooks',
      label: 'bare loop + 5 no-op hooks',
      run: async () => checked(await runBareLoop(direct, PROMPT, noopHooks)),
    },
    {
      id: 'bare-provider',
      label: 'bare loop on ScriptedProvider',
      run: async () => checked(await runBareLoop(viaProvider, PROMPT)),
    },
    { id: 'signalbox', label: 'signalbox', run: async () => checked(await runAgent(plain)) },
    { id: 'signalbox-hooks', label: 'signalbox + 5 no-op hooks', run: async () => checked(await runAgent(hooked)) },
    ...(options.observed
      ? [
          {
            id: 'signalbox-observed',
            label: "signalbox + one '*' event listener",
            run: async () => checked(await runAgent(observed)),
          },
        ]
      : []),
  ]
}

export async function inProcessScenario(steps: number, options: ScenarioOptions): Promise<Table> {
  const measured = await measureInterleaved(inProcessVariants(steps, { observed: true }), {
    rounds: options.rounds,
    warmup: options.warmup,
    warmupMs: options.warmupMs ?? 0,
    minSampleMs: options.quick ? 20 : 60,
    onSample: options.progress,
  })
  const rows = buildRows(measured, 'us-per-step', 'bare', { 'signalbox-hooks': 'bare-hooks', signalbox: 'bare-provider' })
  const us = (id: string) => rowById(rows, id).median
  const cpu = (id: string) => rowById(rows, id).cpu?.usPerStep ?? Number.NaN
  const overhead = (name: string, id: string, base: string, target = IN_PROCESS_TARGET_US): Check => ({
    name,
    value: us(id) - us(base),
    unit: 'µs',
    target: `≤ ${target} µs`,
    pass: us(id) - us(base) <= target,
    cpuValue: cpu(id) - cpu(base),
  })
  const checks: Check[] = [
    overhead('signalbox overhead per tool step (signalbox − bare loop)', 'signalbox', 'bare'),
    overhead('same, both on the ScriptedProvider (runtime only)', 'signalbox', 'bare-provider'),
    overhead(
      'with 5 no-op hooks (signalbox + hooks − bare + hooks)',
      'signalbox-hooks',
      'bare-hooks',
      IN_PROCESS_HOOKS_TARGET_US,
    ),
  ]
  return {
    id: `in-process-${steps}`,
    title: `(a) In-process, no HTTP: one run of ${steps} tool steps`,
    note: `Per tool step, median of ${options.rounds} interleaved rounds. "+µs / step" is the row minus the bare loop; "like-for-like" compares signalbox with the bare loop on the same ScriptedProvider, and the hooked agent with the hooked bare loop. The '*' listener row is extra (not a target): it shows what observing every event costs.`,
    metric: 'us-per-step',
    baseline: 'bare',
    rows,
    checks,
  }
}
