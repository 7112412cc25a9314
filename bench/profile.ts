/**
 * One in-process variant in a loop, nothing else (no forced GCs, no other variants), to be run
 * under the V8 profiler:
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/signalbox-prof --import tsx bench/profile.ts signalbox
 *   node --import tsx bench/profile-summary.ts /tmp/signalbox-prof/<file>.cpuprofile
 *
 * Variants: bare, bare-hooks, bare-provider, signalbox (default), signalbox-hooks, signalbox-observed, and
 * the design's floor: floor, floor-hooks.
 * Options: --steps 200 (per run), --seconds 8 (profiled time, after a warm-up), --runs 1 (runs at
 * once: `--runs 1000 --steps 5` is the in-process throughput scenario's shape).
 */
import { parseArgs } from 'node:util'
import { inProcessAndFloorVariants } from './scenarios/xstate-floor.ts'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    steps: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '8' },
    runs: { type: 'string', default: '1' },
  },
})
const id = positionals[0] ?? 'signalbox'
const variant = inProcessAndFloorVariants(Number(values.steps), { observed: true }).find((v) => v.id === id)
if (!variant) throw new Error(`unknown variant "${id}"`)
const atOnce = Number(values.runs)
const run =
  atOnce === 1
    ? variant.run
    : async () => (await Promise.all(Array.from({ length: atOnce }, () => variant.run()))).reduce((a, b) => a + b, 0)

for (let i = 0; i < 5; i++) await run()
const until = process.hrtime.bigint() + BigInt(Number(values.seconds) * 1e9)
let runs = 0
let steps = 0
const start = process.hrtime.bigint()
while (process.hrtime.bigint() < until) {
  steps += await run()
  runs += atOnce
}
const ns = Number(process.hrtime.bigint() - start)
console.log(`${variant.label}: ${runs} runs, ${steps} tool steps, ${(ns / steps / 1000).toFixed(1)} µs per tool step`)
