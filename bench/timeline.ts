/**
 * One in-process figure over time: the µs of every sample, in order, instead of their median. A
 * run of the bench keeps 7 samples of each variant; in one process the hooked agent moves between
 * phases of ~70 and ~110-140 µs a step, a few hundred ms each, as V8 moves the loop's short-lived
 * objects into its old generation and back (docs/benchmarks.md, "A timed in-process figure
 * alternates between two phases"). This shows them:
 *
 *   node --import ./bench/loader/use-dist.mjs --import tsx bench/timeline.ts signalbox-hooks
 *   node --no-allocation-site-pretenuring --import ./bench/loader/use-dist.mjs --import tsx bench/timeline.ts signalbox-hooks
 *
 * Variants: those of the in-process scenario (`signalbox`, `signalbox-hooks`, `bare`, ...) and the
 * design's floor (`floor`, `floor-hooks`), several at once (comma-separated) interleaved as the
 * bench does. --rounds 30 samples each (after the bench's warm-up), --steps 20 a run, --sample-ms
 * 60 a sample. Prints each variant's samples, their median and their mean.
 */
import { parseArgs } from 'node:util'
import { measureInterleaved, median, nsPerStep } from './lib/measure.ts'
import { inProcessAndFloorVariants } from './scenarios/xstate-floor.ts'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '30' },
    steps: { type: 'string', default: '20' },
    'sample-ms': { type: 'string', default: '60' },
    help: { type: 'boolean', short: 'h', default: false },
  },
})
if (values.help || positionals.length === 0) {
  console.log(
    'usage: node --import ./bench/loader/use-dist.mjs --import tsx bench/timeline.ts <variant[,variant...]> [--rounds 30] [--steps 20] [--sample-ms 60]',
  )
  process.exit(positionals.length === 0 && !values.help ? 1 : 0)
}
const steps = Number(values.steps)
const all = inProcessAndFloorVariants(steps, { observed: true })
const variants = (positionals[0] as string).split(',').map((id) => {
  const variant = all.find((v) => v.id === id)
  if (!variant) throw new Error(`unknown variant "${id}" (known: ${all.map((v) => v.id).join(', ')})`)
  return variant
})

// The bench's warm-up for the in-process scenario (index.ts: 2 runs and at least 500 ms a variant).
const measured = await measureInterleaved(variants, {
  rounds: Number(values.rounds),
  warmup: 2,
  warmupMs: 500,
  minSampleMs: Number(values['sample-ms']),
})
for (const m of measured) {
  const us = nsPerStep(m).map((ns) => ns / 1000)
  const mean = us.reduce((a, b) => a + b, 0) / us.length
  console.log(`${m.variant.id}: median ${median(us).toFixed(1)} µs a step, mean ${mean.toFixed(1)}`)
  console.log(`  samples: ${us.map((v) => v.toFixed(0)).join(' ')}`)
}
