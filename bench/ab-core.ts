/**
 * A cut's before/after: this checkout's core against another checkout's core (e.g. `main` in a
 * second worktree), in ONE process, on the in-process workload (`ScriptedProvider`, one `noop`
 * tool), interleaved round by round, so the machine's load hits both alike. Prints the median
 * CPU and wall µs per tool step of each, and after / before.
 *
 *   node --import tsx bench/ab-core.ts --other /path/to/other/checkout [--steps 20] [--rounds 9] [--runs 1] [--built]
 *
 * `--runs 1000 --steps 5`: each sample is 1,000 runs at once (the throughput scenario's shape).
 * `--built`: each checkout's built core (`packages/core/dist`, after `pnpm build` in both), as
 * users run it, instead of its sources through tsx.
 *
 * The other checkout needs its own `pnpm install` (its core imports its own xstate).
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { cpuNsPerStep, measureInterleaved, median, nsPerStep, type Variant } from './lib/measure.ts'
import {
  FINAL_ANSWER,
  modelFor,
  NOOP_DESCRIPTION,
  NOOP_RESULT,
  noopHooks,
  noopSchema,
  PROMPT,
  responder,
} from './lib/workload.ts'

const { values } = parseArgs({
  options: {
    other: { type: 'string' },
    steps: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '9' },
    runs: { type: 'string', default: '1' },
    built: { type: 'boolean', default: false },
  },
})
if (values.other === undefined) throw new Error('--other <checkout> is required')
const steps = Number(values.steps)
const runsAtOnce = Number(values.runs)

interface Core {
  createAgent(options: Record<string, unknown>): {
    run(input: string): Promise<{ output: unknown; messages: { role: string }[] }>
  }
  tool(definition: Record<string, unknown>): unknown
}
interface Testing {
  ScriptedProvider: new (options: Record<string, unknown>) => unknown
}

async function load(root: string): Promise<{ core: Core; testing: Testing }> {
  const at = (path: string) => pathToFileURL(resolve(root, path)).href
  const [core, testing] = values.built
    ? ['packages/core/dist/index.js', 'packages/core/dist/testing/index.js']
    : ['packages/core/src/index.ts', 'packages/core/src/testing/index.ts']
  return { core: (await import(at(core))) as Core, testing: (await import(at(testing))) as Testing }
}

/** The bench's agent, built from one checkout's own core. */
function variants(name: string, { core, testing }: { core: Core; testing: Testing }): Variant[] {
  const provider = new testing.ScriptedProvider({ script: responder, model: modelFor(steps), record: false })
  const noop = core.tool({ name: 'noop', description: NOOP_DESCRIPTION, schema: noopSchema, execute: async () => NOOP_RESULT })
  const agent = (hooks: boolean) =>
    core.createAgent({ provider, tools: [noop], maxTurns: 1000, ...(hooks ? { hooks: noopHooks } : {}) })
  const once = async (built: ReturnType<typeof agent>) => {
    const result = await built.run(PROMPT)
    if (result.output !== FINAL_ANSWER) throw new Error(`${name}: run ended with ${JSON.stringify(result.output)}`)
    return result.messages.filter((m) => m.role === 'tool').length
  }
  const run = (built: ReturnType<typeof agent>) => async () => {
    if (runsAtOnce === 1) return once(built)
    const done = await Promise.all(Array.from({ length: runsAtOnce }, () => once(built)))
    return done.reduce((a, b) => a + b, 0)
  }
  const plain = agent(false)
  const hooked = agent(true)
  return [
    { id: name, label: name, run: run(plain) },
    { id: `${name}-hooks`, label: `${name} + 5 no-op hooks`, run: run(hooked) },
  ]
}

const before = variants('before', await load(values.other))
const after = variants('after', await load(resolve(import.meta.dirname, '..')))
const measured = await measureInterleaved([...before, ...after], {
  rounds: Number(values.rounds),
  warmup: 3,
  warmupMs: 1500,
  minSampleMs: 100,
})
const us = (values: number[]) => median(values) / 1000
const byId = new Map(measured.map((m) => [m.variant.id, m]))
console.log(
  `${steps}-step runs (${runsAtOnce} at once), ${values.built ? 'built cores (dist/)' : 'sources (tsx)'}, ${values.rounds} interleaved rounds, µs per tool step (median): CPU, wall`,
)
for (const hooks of ['', '-hooks']) {
  const b = byId.get(`before${hooks}`)
  const a = byId.get(`after${hooks}`)
  if (!a || !b) continue
  const [bc, ac] = [us(cpuNsPerStep(b)), us(cpuNsPerStep(a))]
  const [bw, aw] = [us(nsPerStep(b)), us(nsPerStep(a))]
  console.log(
    `${hooks ? 'five hooks' : 'no hooks  '}  CPU ${bc.toFixed(1)} -> ${ac.toFixed(1)} (${(ac / bc).toFixed(2)}x)   wall ${bw.toFixed(1)} -> ${aw.toFixed(1)} (${(aw / bw).toFixed(2)}x)`,
  )
}
