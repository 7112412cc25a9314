/**
 * What outlives V8's young-generation collections after a run has finished: the old generation's
 * growth per run, through three young collections after each batch of runs. What a run leaves
 * there is garbage V8 only reclaims at its next full GC; the more runs leave, the sooner V8 starts
 * allocating the loop's short-lived objects in the old generation itself (pretenuring), and the
 * slower a step becomes (docs/benchmarks.md, "A timed in-process figure alternates").
 *
 *   node --import tsx bench/young-retention.ts signalbox,signalbox-hooks,floor,floor-hooks,xstate-actor,dropped-graph
 *
 * Each variant runs in a child of its own with a 64 MB young generation (no collection during a
 * batch), V8's pretenuring and page promotion off (the growth is what survives, not what V8 chose
 * to allocate old), sweeping done inside each GC (the old generation's size is then exact) and no
 * full GC of V8's own choosing, after a warm-up of --warm-up 1000 runs (the JIT's own allocations
 * done); the built packages are loaded (`node bench/run.mjs --build-only` first). Variants: those of the
 * in-process scenario and the design's floor, `xstate-actor` (an actor of a one-state machine
 * whose context holds 4,000 messages, created and dropped: XState alone) and `dropped-graph` (the
 * same 4,000 messages made and dropped: the probe's own floor, ~0), `signalbox-hooks-4k` (the
 * hooked agent, its tool answering 4 KiB: a run that kept its events would keep 80 KiB of them);
 * `--xstate <dir>` runs `xstate-actor` on another copy of XState (e.g. one with
 * docs/xstate-microstep.patch applied); `--pretenuring` leaves V8's allocation-site pretenuring on,
 * as it is in every process users run (what it then allocates old from the start counts too).
 * Prints KiB a run (median of
 * --batches 5 batches of --batch 10 runs; a batch the JIT still allocated in shows more, and the
 * median leaves it out).
 */
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { getHeapSpaceStatistics } from 'node:v8'
import { tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { median } from './lib/measure.ts'
import { benchAgent, runAgent } from './lib/signalbox.ts'
import { modelFor, noopSchema, noopTool, responder } from './lib/workload.ts'
import { inProcessAndFloorVariants } from './scenarios/xstate-floor.ts'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    child: { type: 'boolean', default: false },
    steps: { type: 'string', default: '20' },
    batch: { type: 'string', default: '10' },
    batches: { type: 'string', default: '5' },
    'warm-up': { type: 'string', default: '1000' },
    xstate: { type: 'string' },
    pretenuring: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
})
const ids = (positionals[0] ?? 'signalbox,signalbox-hooks,floor,floor-hooks,xstate-actor,dropped-graph').split(',')
if (values.help) {
  console.log(
    'usage: node --import tsx bench/young-retention.ts [variant,...] [--steps 20] [--batch 10] [--batches 5] [--warm-up 1000] [--pretenuring] [--xstate DIR]',
  )
  process.exit(0)
}

const V8_FLAGS = [
  '--expose-gc',
  ...(values.pretenuring ? [] : ['--no-allocation-site-pretenuring']),
  '--no-page-promotion',
  '--no-concurrent-sweeping',
  // No full GC of V8's own choosing during a batch (it frees earlier garbage: the old generation shrinks).
  '--no-memory-reducer',
  '--no-incremental-marking',
  '--min-semi-space-size=64',
  '--max-semi-space-size=64',
]

if (!values.child) {
  const useDist = pathToFileURL(fileURLToPath(new URL('./loader/use-dist.mjs', import.meta.url))).href
  const self = fileURLToPath(import.meta.url)
  const passOn = [
    '--steps',
    values.steps as string,
    '--batch',
    values.batch as string,
    '--batches',
    values.batches as string,
    '--warm-up',
    values['warm-up'] as string,
    ...(values.xstate ? ['--xstate', path.resolve(values.xstate)] : []),
    ...(values.pretenuring ? ['--pretenuring'] : []),
  ]
  for (const id of ids) {
    const child = spawnSync(
      process.execPath,
      [...V8_FLAGS, '--import', useDist, '--import', 'tsx', self, '--child', id, ...passOn],
      { encoding: 'utf8' },
    )
    if (child.status !== 0) throw new Error(`${id}: the child failed\n${child.stderr}`)
    const { keptKiB } = JSON.parse(child.stdout.trim().split('\n').at(-1) as string) as { keptKiB: number[] }
    console.log(
      `${id}: ${median(keptKiB).toFixed(1)} KiB a run kept through three young collections (batches: ${keptKiB.map((k) => k.toFixed(1)).join(', ')})`,
    )
  }
  process.exit(0)
}

const gc = (globalThis as { gc?: (options?: { type: 'minor' | 'major' }) => void }).gc
if (gc === undefined) throw new Error('the child runs with --expose-gc')
const tick = () => new Promise((resolve) => setImmediate(resolve))
const oldSpace = () => getHeapSpaceStatistics().find((s) => s.space_name === 'old_space')?.space_used_size ?? 0

const id = ids[0] as string
const messages = () => Array.from({ length: 4000 }, (_, i) => ({ role: 'user', content: `message ${i} of a run` }))
function runOf(): () => Promise<unknown> {
  if (id === 'dropped-graph') return async () => messages().length
  if (id === 'xstate-actor') {
    // The very copy of XState the agent machine runs on, or another (`--xstate <its directory>`).
    const from = values.xstate
      ? createRequire(path.resolve(values.xstate, 'package.json'))
      : createRequire(import.meta.resolve('@signalbox/core'))
    const xstate = from(values.xstate ? './dist/xstate.cjs.js' : 'xstate') as {
      createMachine(config: object): unknown
      createActor(machine: unknown): unknown
    }
    const machine = xstate.createMachine({ context: () => ({ messages: messages() }), initial: 'idle', states: { idle: {} } })
    return async () => xstate.createActor(machine)
  }
  const steps = Number(values.steps)
  if (id === 'signalbox-hooks-4k') return resultsOf4KiB(steps)
  const variant = inProcessAndFloorVariants(steps).find((v) => v.id === id)
  if (!variant) throw new Error(`unknown variant "${id}"`)
  return variant.run
}
/** The hooked agent, its tool answering 4 KiB (a new string each call): what keeps a run's events shows. */
function resultsOf4KiB(steps: number): () => Promise<unknown> {
  const sized = tool({
    name: noopTool.name,
    description: noopTool.description,
    schema: noopSchema,
    execute: async () => `${'x'.repeat(4096)}${Math.random()}`,
  })
  const agent = benchAgent(new ScriptedProvider({ script: responder, model: modelFor(steps), record: false }), true, [sized])
  return () => runAgent(agent)
}

const run = runOf()
for (let i = 0; i < Number(values['warm-up']); i++) await run()

const batch = Number(values.batch)
const keptKiB: number[] = []
for (let b = 0; b < Number(values.batches); b++) {
  // A clean start: the garbage of earlier batches collected, the young generation empty.
  gc({ type: 'major' })
  gc({ type: 'major' })
  await tick()
  gc({ type: 'minor' })
  const before = oldSpace()
  for (let i = 0; i < batch; i++) await run()
  await tick()
  for (let i = 0; i < 3; i++) {
    gc({ type: 'minor' })
    await tick()
  }
  keptKiB.push((oldSpace() - before) / 1024 / batch)
}
console.log(JSON.stringify({ id, keptKiB }))
