/**
 * One process of `bench/instructions.ts`: runs one variant `warmUp` times, then `runs` times (each
 * time `atOnce` runs at once), and prints the tool steps of the measured runs. The measured window
 * is marked for callgrind by a call to `process.cpuUsage()` at each end (libuv's `uv_getrusage`,
 * which the counter dumps before; nothing else in this process calls it): it holds the measured
 * runs and the full GC after them, each variant paying for its own garbage, and starts after a
 * full GC, so every variant's window starts from a collected heap. An HTTP variant talks to the
 * scripted model server, started here in a child process (which valgrind does not follow).
 * Usage: instructions-child.ts <http|in-process> <variant> <warmUp> <runs> <steps> [atOnce]
 */
import { httpLoopRunners } from '../scenarios/http-loops.ts'
import { inProcessAndFloorVariants } from '../scenarios/xstate-floor.ts'
import { type BenchServer, startBenchServer } from './model-server.ts'

const [where = '', id = '', warmUpArg = '', runsArg = '', stepsArg = '', atOnceArg = '1'] = process.argv.slice(2)
const [warmUp, runs, steps, atOnce] = [warmUpArg, runsArg, stepsArg, atOnceArg].map(Number) as [number, number, number, number]
if (where !== 'http' && where !== 'in-process') throw new Error(`where is http or in-process, got "${where}"`)
if (![warmUp, runs, steps, atOnce].every((n) => Number.isInteger(n) && n >= 0) || runs < 1 || steps < 1 || atOnce < 1) {
  throw new Error(`warmUp, runs, steps and atOnce are counts, got ${warmUpArg} ${runsArg} ${stepsArg} ${atOnceArg}`)
}
// Checked before the runs, not after minutes of them under valgrind.
const gc = (globalThis as { gc?: () => void }).gc
if (!gc) throw new Error('run with --expose-gc')

let server: BenchServer | undefined
try {
  let run: (() => Promise<number>) | undefined
  if (where === 'http') {
    server = await startBenchServer('child-process')
    run = (httpLoopRunners({ url: server.url, steps, withHooks: true }) as Record<string, () => Promise<number>>)[id]
  } else {
    run = inProcessAndFloorVariants(steps).find((v) => v.id === id)?.run
  }
  if (!run) throw new Error(`unknown variant "${id}"`)
  const batch = async () => {
    let ran = 0
    for (const n of await Promise.all(Array.from({ length: atOnce }, () => run()))) ran += n
    return ran
  }
  for (let i = 0; i < warmUp; i++) await batch()
  gc()
  process.cpuUsage() // the window opens
  let total = 0
  for (let i = 0; i < runs; i++) total += await batch()
  gc()
  process.cpuUsage() // the window closes
  console.log(JSON.stringify({ variant: id, warmUp, runs, atOnce, steps: total }))
} finally {
  await server?.close()
}
