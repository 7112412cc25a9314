/**
 * Bytes allocated per tool step, and by whom: one in-process variant in a loop under V8's sampling
 * heap profiler (every allocation, including what the next GC frees). Allocation, unlike time,
 * does not move with the machine's load, so a cut's effect on it shows in one run:
 *
 *   node --import ./bench/loader/use-dist.mjs --import tsx bench/alloc.ts signalbox
 *
 * Variants and options as bench/profile.ts (--steps 20, --runs 500 measured runs after a warm-up,
 * --top 25). Prints the total per step, the share of each package (signalbox's own, xstate, zod,
 * Node), and the allocation sites that allocate most.
 */
import { Session } from 'node:inspector/promises'
import { parseArgs } from 'node:util'
import { inProcessVariants } from './scenarios/in-process.ts'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    steps: { type: 'string', default: '20' },
    runs: { type: 'string', default: '500' },
    top: { type: 'string', default: '25' },
  },
})
const id = positionals[0] ?? 'signalbox'
const variant = inProcessVariants(Number(values.steps), { observed: true }).find((v) => v.id === id)
if (!variant) throw new Error(`unknown variant "${id}"`)

for (let i = 0; i < 200; i++) await variant.run()
const session = new Session()
session.connect()
await session.post('HeapProfiler.enable')
// 64-byte sampling with collected objects kept: what a step allocates, not what it retains.
await session.post('HeapProfiler.startSampling', {
  samplingInterval: 64,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
})
let steps = 0
for (let i = 0; i < Number(values.runs); i++) steps += await variant.run()
const { profile } = await session.post('HeapProfiler.stopSampling')
session.disconnect()

interface Node {
  callFrame: { functionName: string; url: string; lineNumber: number }
  selfSize: number
  children: Node[]
}
/** Where a file belongs: signalbox's packages, a dependency by name, or Node itself. */
const owner = (url: string): string => {
  if (url === '' || url.startsWith('node:')) return 'node'
  const dependency = url.match(/node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\//)
  if (dependency && !dependency[1]?.startsWith('@signalbox/')) return dependency[1] as string
  if (/\/packages\/([^/]+)\//.test(url) || url.includes('@signalbox/')) return 'signalbox'
  return 'bench'
}
const bySite = new Map<string, number>()
const byOwner = new Map<string, number>()
/** Node's own frames count for the JavaScript that called them (a `new Map()` in a signalbox function is signalbox's). */
const walk = (node: Node, caller: { site: string; owner: string }) => {
  const { functionName, url, lineNumber } = node.callFrame
  const own = owner(url)
  const here =
    own === 'node' && caller.site !== ''
      ? caller
      : {
          site: `${functionName || '(anonymous)'} ${url.replace(/^.*\/(packages|node_modules)\//, '$1/')}:${lineNumber + 1}`,
          owner: own,
        }
  if (node.selfSize > 0) {
    bySite.set(here.site, (bySite.get(here.site) ?? 0) + node.selfSize)
    byOwner.set(here.owner, (byOwner.get(here.owner) ?? 0) + node.selfSize)
  }
  for (const child of node.children) walk(child, here)
}
walk(profile.head as Node, { site: '', owner: 'node' })

const perStep = (bytes: number) => `${(bytes / steps).toFixed(0).padStart(7)} B`
const total = [...byOwner.values()].reduce((a, b) => a + b, 0)
console.log(`${variant.label}: ${steps} tool steps, ${perStep(total).trim()} allocated per tool step`)
for (const [name, bytes] of [...byOwner].sort((a, b) => b[1] - a[1]))
  console.log(`${perStep(bytes)}  ${((100 * bytes) / total).toFixed(0).padStart(3)}%  ${name}`)
console.log('\nsites, per tool step:')
for (const [site, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top)))
  console.log(`${perStep(bytes)}  ${site}`)
