/**
 * Where a counted step goes, by function, the JIT's frames named: reads a callgrind file kept by
 * `bench/instructions.ts --keep DIR --js-names` with the map V8 wrote beside it, and prints the
 * instructions per tool step of each function's own code and of each origin (xstate, signalbox,
 * V8's builtins and runtime, its GC, its compilers), and charged to the JavaScript that caused it
 * (the builtins, runtime and GC go up the callers, in proportion to what each call cost). With
 * `--callers NAME`: what the calls into the functions whose name starts with NAME cost (inclusive),
 * by caller; with `--causes NAME`: those functions' own cost (a builtin, the GC) charged to the
 * JavaScript functions that caused it.
 *
 *   node --import tsx bench/instructions.ts signalbox-hooks --in-process --steps 20 --keep /tmp/cg --js-names
 *   node --import tsx bench/callgrind-names.ts /tmp/cg/signalbox-hooks-1.callgrind.2-01 --steps 100
 *   node --import tsx bench/callgrind-names.ts /tmp/cg/signalbox-hooks-1.callgrind.2-01 --steps 100 --callers Builtins_ObjectAssign
 *   node --import tsx bench/callgrind-names.ts /tmp/cg/signalbox-hooks-1.callgrind.2-01 --steps 100 --causes v8::internal::JSObject::MigrateToMap
 *
 * `--steps`: the tool steps of the counted window (counted runs × runs at once × steps a run), to
 * read per step. `--map`: the map, when it is not `<variant>-<i>.perf.map` beside the file.
 */
import { existsSync, readFileSync } from 'node:fs'
import { parseArgs } from 'node:util'
import { codeMap, originOf, readCallgrind } from './lib/callgrind-names.ts'

const USAGE =
  'node --import tsx bench/callgrind-names.ts <file.callgrind.2-01> [--steps N] [--top 40] [--callers NAME | --causes NAME] [--map FILE]\n' +
  "Instructions per tool step by function and by origin, the JIT's frames named from V8's map\n" +
  '(bench/instructions.ts --keep DIR --js-names writes both). --callers NAME: the calls into NAME*, by caller;\n' +
  '--causes NAME: the own code of NAME* (a builtin, the GC), charged to the JavaScript functions that caused it.'
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    map: { type: 'string' },
    steps: { type: 'string', default: '1' },
    top: { type: 'string', default: '40' },
    callers: { type: 'string' },
    causes: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
})
const file = positionals[0]
if (values.help || file === undefined) {
  console.log(USAGE)
  process.exit(values.help ? 0 : 2)
}
const mapFile = values.map ?? file.replace(/\.callgrind(\.\d+-\d+)?$/, '.perf.map')
for (const [what, path] of [
  ['callgrind file', file],
  ["V8's map (bench/instructions.ts --js-names)", mapFile],
]) {
  if (!existsSync(path as string)) {
    console.error(`no ${what} at ${path}`)
    process.exit(2)
  }
}
const steps = Number(values.steps)
const top = Number(values.top)
const costs = readCallgrind(readFileSync(file, 'utf8'), codeMap(readFileSync(mapFile, 'utf8')))
const perStep = (n: number) => (n / steps).toFixed(0).padStart(10)
const sorted = (map: Map<string, number>) => [...map].sort((a, b) => b[1] - a[1])

if (values.causes !== undefined) {
  const by = costs.causesOf(values.causes)
  const total = [...by.values()].reduce((a, b) => a + b, 0)
  console.log(`${values.causes}*'s own code: ${perStep(total).trim()} instructions per step, by the JavaScript that caused it`)
  for (const [name, n] of sorted(by).slice(0, top)) console.log(`${perStep(n)}  ${name}`)
} else if (values.callers !== undefined) {
  const by = costs.callersOf(values.callers)
  const total = [...by.values()].reduce((a, b) => a + b, 0)
  console.log(`calls into ${values.callers}*: ${perStep(total).trim()} instructions per step (inclusive), by caller`)
  for (const [name, n] of sorted(by).slice(0, top)) console.log(`${perStep(n)}  ${name}`)
} else {
  const byOrigin = new Map<string, number>()
  for (const [name, n] of costs.self) byOrigin.set(originOf(name), (byOrigin.get(originOf(name)) ?? 0) + n)
  const total = [...costs.self.values()].reduce((a, b) => a + b, 0)
  console.log(`${perStep(total).trim()} instructions per step (the window, the compilers included), by origin:`)
  for (const [name, n] of sorted(byOrigin)) console.log(`${perStep(n)}  ${name}`)
  console.log('\ncharged to the JavaScript that caused it (builtins, runtime and GC up the callers):')
  for (const [name, n] of sorted(costs.byCause())) console.log(`${perStep(n)}  ${name}`)
  console.log('\nby function (its own code):')
  for (const [name, n] of sorted(costs.self).slice(0, top)) console.log(`${perStep(n)}  ${name}`)
}
