/**
 * One HTTP variant in a loop against the scripted model server (child process), to be run under
 * the V8 profiler, or several variants interleaved for their CPU per tool step:
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/p --import tsx bench/profile-http.ts signalboxStream --seconds 8
 *   node --import tsx bench/profile-http.ts openaiStream,signalboxStream --rounds 9
 *
 * Variants: those of the HTTP scenario (openai, openaiStream, signalbox, signalboxStream, floor,
 * floorStream, ...). `--runs N` runs N at once (`--runs 200 --steps 20` is the throughput
 * scenario's shape), and the figures are then per tool step of the whole batch.
 */
import { parseArgs } from 'node:util'
import { cpuNsPerStep, measureInterleaved, median } from './lib/measure.ts'
import { startBenchServer } from './lib/model-server.ts'
import { httpRunners } from './scenarios/http.ts'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    steps: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '8' },
    rounds: { type: 'string' },
    runs: { type: 'string', default: '1' },
  },
})
const ids = (positionals[0] ?? 'signalboxStream').split(',')
const steps = Number(values.steps)
const server = await startBenchServer('child-process')
try {
  const one = httpRunners({ url: server.url, steps, withHooks: true }) as Record<string, () => Promise<number>>
  for (const id of ids) if (!one[id]) throw new Error(`unknown variant "${id}"`)
  const atOnce = Number(values.runs)
  const runners = Object.fromEntries(
    ids.map((id) => {
      const run = one[id]!
      const batch = async () => (await Promise.all(Array.from({ length: atOnce }, run))).reduce((a, b) => a + b, 0)
      return [id, atOnce === 1 ? run : batch]
    }),
  )
  if (values.rounds !== undefined) {
    const measured = await measureInterleaved(
      ids.map((id) => ({ id, label: id, run: runners[id]! })),
      { rounds: Number(values.rounds), warmup: 2, warmupMs: 0, minSampleMs: 0 },
    )
    for (const m of measured) console.log(`${m.variant.id}: CPU ${(median(cpuNsPerStep(m)) / 1000).toFixed(1)} µs per tool step`)
  } else {
    const run = runners[ids[0]!]!
    for (let i = 0; i < 3; i++) await run()
    const until = process.hrtime.bigint() + BigInt(Number(values.seconds) * 1e9)
    let total = 0
    const start = process.hrtime.bigint()
    while (process.hrtime.bigint() < until) total += await run()
    const ns = Number(process.hrtime.bigint() - start)
    console.log(`${ids[0]}: ${total} tool steps, ${(ns / total / 1000).toFixed(1)} µs per tool step`)
  }
} finally {
  await server.close()
}
