/**
 * One process of `bench/instructions.ts`: runs one variant `runs` times in a row (each time
 * `atOnce` runs at once) and prints the tool steps it ran, after a full GC. An HTTP variant talks
 * to the scripted model server, started here in a child process (which valgrind does not follow).
 * Usage: instructions-child.ts <http|in-process> <variant> <runs> <steps> [atOnce]
 */
import { httpLoopRunners } from '../scenarios/http-loops.ts'
import { inProcessVariants } from '../scenarios/in-process.ts'
import { type BenchServer, startBenchServer } from './model-server.ts'

const [where = '', id = '', runsArg = '', stepsArg = '', atOnceArg = '1'] = process.argv.slice(2)
const runs = Number(runsArg)
const steps = Number(stepsArg)
const atOnce = Number(atOnceArg)
if (where !== 'http' && where !== 'in-process') throw new Error(`where is http or in-process, got "${where}"`)
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
    run = inProcessVariants(steps).find((v) => v.id === id)?.run
  }
  if (!run) throw new Error(`unknown variant "${id}"`)
  let total = 0
  for (let i = 0; i < runs; i++) for (const ran of await Promise.all(Array.from({ length: atOnce }, () => run()))) total += ran
  // What the runs left, collected here: each variant pays for its own garbage (see instructions.ts).
  gc()
  console.log(JSON.stringify({ variant: id, runs, atOnce, steps: total }))
} finally {
  await server?.close()
}
