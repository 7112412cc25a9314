/**
 * Instructions per tool step over HTTP (or in process), counted by valgrind's callgrind, to judge
 * the HTTP targets on figures the machine's load does not move: the timed HTTP rows move by
 * ±0.1-0.2x from run to run on a shared machine. Each variant runs in a process of its own: a
 * warm-up (`--warm-up 15` runs: V8 is still optimizing for some 3,000 steps), then the counted runs
 * (`--runs 5`) and a full GC, each of `--at-once` runs of `--steps` steps. Only that window is
 * counted (the child marks it; callgrind dumps at each mark), on the main thread of a
 * `node --single-threaded`: V8's GC and compilers run there, in one order, so two processes of one
 * commit agree to 0.004% on a quiet machine and to ~1% beside other work (`--repeat 2` shows it),
 * where helper threads used to move counts by hundreds of millions of instructions. With many runs
 * at once, how the replies interleave follows the machine's load: counts move by ~6%, their
 * ratios by ~1%.
 *
 * Reported per tool step: the window's instructions (the loop, the SDK, Node's HTTP, JSON and the
 * GC: the CPU a step costs) without V8's optimizing compilers, and the compilers' apart (code still
 * being optimized after the warm-up, a few functions a run: a tail that ends, not a step's cost).
 * The built packages are measured (`dist/`, as `pnpm bench` does).
 *
 *   node bench/run.mjs --build-only
 *   node --import tsx bench/instructions.ts openai,floor,signalbox
 *   node --import tsx bench/instructions.ts openai,floor,signalbox --steps 20 --at-once 200 --warm-up 3 --runs 1
 *   node --import tsx bench/instructions.ts signalbox,signalbox-hooks --in-process --steps 20 --warm-up 150 --runs 50
 *   node --import tsx bench/instructions.ts floor,floor-hooks,signalbox,signalbox-hooks --in-process
 *
 * Variants: those of the HTTP scenario without the peers (`bench/scenarios/http-loops.ts`), or with
 * `--in-process` those of the in-process scenario (e.g. `signalbox,signalbox-hooks`) and the design's
 * floor in process (`floor`, `floor-hooks`: what the chart's waits cost XState itself). Needs
 * `valgrind` (Debian: `apt-get install valgrind`); a 200-step run takes ~15 s under it, the first
 * command ~6 min on 2 cores.
 */
import { execFile, spawn } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { httpLoopRunners } from './scenarios/http-loops.ts'
import { inProcessAndFloorVariants } from './scenarios/xstate-floor.ts'

function options() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        'warm-up': { type: 'string', default: '15' },
        runs: { type: 'string', default: '5' },
        repeat: { type: 'string', default: '1' },
        steps: { type: 'string', default: '200' },
        jobs: { type: 'string', default: '2' },
        'at-once': { type: 'string', default: '1' },
        'in-process': { type: 'boolean', default: false },
        keep: { type: 'string' },
        'js-names': { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h' },
      },
    })
  } catch (error) {
    // A bad option gets one line, not a stack.
    console.error(`${(error as Error).message.split('\n')[0]} (--help lists the options)`)
    process.exit(2)
  }
}
const { values, positionals } = options()
const where = values['in-process'] ? 'in-process' : 'http'
/** The variants' names (building them opens no connection). */
const VARIANTS =
  where === 'http'
    ? Object.keys(httpLoopRunners({ url: 'http://127.0.0.1:1/v1', steps: 1, withHooks: true }))
    : inProcessAndFloorVariants(1).map((v) => v.id)
if (values.help) {
  console.log(
    'node --import tsx bench/instructions.ts <variant,...> [--warm-up 15] [--runs 5] [--steps 200] [--at-once 1] [--repeat 1] [--jobs 2]\n' +
      'Instructions per tool step, counted by valgrind (callgrind), of the variants named (the first is the baseline):\n' +
      `  ${VARIANTS.join(', ')}\n` +
      '--warm-up N  runs before the count (default 15: V8 optimizes for some 3,000 steps)\n' +
      '--runs N     runs counted, then a full GC (default 5)\n' +
      '--at-once N  each run is N runs at once (the throughput scenario: --steps 20 --at-once 200 --warm-up 3 --runs 1)\n' +
      '--in-process the in-process variants instead (no HTTP: the ScriptedProvider; the floor on the bare responder), e.g. floor,signalbox\n' +
      '--repeat N   count each variant N times, in processes of their own (the spread between identical counts)\n' +
      '--jobs N     processes under valgrind at once (default 2)\n' +
      '--keep DIR   keep the callgrind files there (callgrind_annotate reads them; <variant>-<i>.callgrind.2-01 is the window)\n' +
      '--js-names   with --keep: V8 writes where it put each compiled function (--perf-basic-prof) to <variant>-<i>.perf.map,\n' +
      '             so bench/callgrind-names.ts can name the JIT frames (the map adds a little work: name with it, count without)',
  )
  process.exit(0)
}
// In process, the bare loops' own work is under a count's uncertainty: a baseline of theirs gives no ratio.
const variants = (positionals[0] ?? (where === 'http' ? 'openai,floor,signalbox' : 'signalbox,signalbox-hooks')).split(',')
const unknown = variants.filter((v) => !VARIANTS.includes(v))
if (unknown.length > 0) {
  console.error(`unknown variant ${unknown.map((v) => `"${v}"`).join(', ')}; the variants are ${VARIANTS.join(', ')}`)
  process.exit(2)
}
const numberOf = (name: string) => Number(values[name as 'runs'])
const [warmUp, runs, steps, atOnce, repeat] = ['warm-up', 'runs', 'steps', 'at-once', 'repeat'].map(numberOf) as [
  number,
  number,
  number,
  number,
  number,
]
if (!(Number.isInteger(warmUp) && warmUp >= 0)) {
  console.error('--warm-up takes a count of runs (0 or more)')
  process.exit(2)
}
if (values['js-names'] && values.keep === undefined) {
  console.error('--js-names needs --keep DIR (the map is kept beside the callgrind files)')
  process.exit(2)
}
if (![runs, steps, atOnce, repeat].every((n) => Number.isInteger(n) && n >= 1)) {
  console.error('--runs, --steps, --at-once and --repeat take positive integers')
  process.exit(2)
}

const run = promisify(execFile)
try {
  await run('valgrind', ['--version'])
} catch {
  console.error('bench/instructions.ts needs valgrind on the PATH (Debian: apt-get install valgrind).')
  process.exit(2)
}

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const child = here('./lib/instructions-child.ts')
const useDist = pathToFileURL(here('./loader/use-dist.mjs')).href
const dir = values.keep ?? mkdtempSync(join(tmpdir(), 'signalbox-instructions-'))
mkdirSync(dir, { recursive: true })

interface Count {
  /** The measured window's instructions, on the main thread. */
  total: number
  /** Those of V8's optimizing compilers (TurboFan, Maglev), in the window. */
  compiler: number
  steps: number
}

/** A callgrind file's instruction count, and the optimizing compilers' part of it. */
async function annotate(file: string): Promise<{ total: number; compiler: number }> {
  const { stdout } = await run('callgrind_annotate', ['--threshold=100', file], { maxBuffer: 1 << 28 })
  let total = 0
  let compiler = 0
  for (const line of stdout.split('\n')) {
    const match = /^\s*([\d,]+) \(\s*[\d.]+%\)\s+(.*)$/.exec(line)
    if (!match) continue
    const n = Number(match[1]!.replaceAll(',', ''))
    if (match[2]!.includes('PROGRAM TOTALS')) total = n
    else if (/v8::internal::(compiler|maglev)::/.test(match[2]!)) compiler += n
  }
  return { total, compiler }
}

/** One process under callgrind: the instructions of its measured window (see the child). */
async function count(variant: string, repeat: number): Promise<Count> {
  const out = join(dir, `${variant}-${repeat}.callgrind`)
  // A kept directory may hold an earlier count's files.
  for (const f of readdirSync(dir)) if (f.startsWith(`${variant}-${repeat}.callgrind`)) rmSync(join(dir, f))
  const env = { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${useDist}`.trim() }
  const args = [
    '--tool=callgrind',
    '--separate-threads=yes',
    // The child opens and closes its window with process.cpuUsage(): a dump at each, so the
    // second dump holds the window alone (a function-triggered dump holds the calling thread).
    '--dump-before=uv_getrusage',
    `--callgrind-out-file=${out}`,
    process.execPath,
    ...(values['js-names'] ? ['--perf-basic-prof'] : []),
    // Everything V8 does on the main thread, in one order: its GC and compilers have no helper
    // threads whose share moves from one process to the next.
    '--single-threaded',
    // No major GC starts by chance inside a window (one is some 150M instructions): the old
    // generation is sized so that none starts; the window ends with a full GC of its own.
    '--initial-old-space-size=1024',
    '--expose-gc',
    '--import',
    'tsx',
    child,
    where,
    variant,
    String(warmUp),
    String(runs),
    String(steps),
    String(atOnce),
  ]
  const stdout = await new Promise<string>((resolve, reject) => {
    const p = spawn('valgrind', args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
    let text = ''
    let errors = ''
    p.stdout.on('data', (chunk: Buffer) => (text += chunk))
    p.stderr.on('data', (chunk: Buffer) => (errors += chunk))
    p.once('error', reject)
    p.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`${variant} exited with ${code}:\n${errors.slice(-2000)}`))
      try {
        // valgrind runs node in its own process: the map is named after valgrind's pid.
        if (values['js-names']) moveMap(`/tmp/perf-${p.pid}.map`, `${out.replace(/\.callgrind$/, '')}.perf.map`)
        resolve(text)
      } catch (error) {
        reject(new Error(`${variant}: V8's map of compiled code was not written (${(error as Error).message})`))
      }
    })
  })
  const ran = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { steps?: number }
  // Two dumps, both of the main thread: anything else calling uv_getrusage would move the window.
  const dumps = readdirSync(dir).filter((f) => new RegExp(`^${variant}-${repeat}\\.callgrind\\.\\d+-`).test(f))
  if (dumps.length !== 2 || !dumps.includes(`${variant}-${repeat}.callgrind.2-01`)) {
    throw new Error(`${variant}: expected the window's two dumps on the main thread, found ${dumps.join(', ') || 'none'}`)
  }
  return { ...(await annotate(join(dir, `${variant}-${repeat}.callgrind.2-01`))), steps: ran.steps ?? Number.NaN }
}

function moveMap(from: string, to: string): void {
  try {
    renameSync(from, to)
  } catch {
    // Another filesystem (a kept directory elsewhere): copy, then remove.
    copyFileSync(from, to)
    rmSync(from, { force: true })
  }
}

/** Runs the jobs `jobs` at a time. */
async function pooled<T>(tasks: (() => Promise<T>)[], jobs: number): Promise<T[]> {
  const results: T[] = new Array(tasks.length)
  let next = 0
  const lane = async () => {
    while (next < tasks.length) {
      const i = next++
      results[i] = await tasks[i]!()
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, lane))
  return results
}

console.log(
  `instructions per tool step ${where === 'http' ? 'over HTTP' : 'in process'} (callgrind): ${variants.join(', ')}; ${warmUp} runs of warm-up, ${runs} counted, of ${atOnce === 1 ? '' : `${atOnce} at once × `}${steps} steps; node ${process.version}`,
)
try {
  const tasks = variants.flatMap((v) => Array.from({ length: repeat }, (_, i) => () => count(v, i + 1)))
  const counts = await pooled(tasks, Number(values.jobs))
  const rows = variants.map((variant, v) => {
    const mine = counts.slice(v * repeat, (v + 1) * repeat)
    const work = mine.map((c) => (c.total - c.compiler) / c.steps).sort((a, b) => a - b)
    const compiler = mine.reduce((n, c) => n + c.compiler / c.steps, 0) / repeat
    return { variant, work, median: work[Math.floor((repeat - 1) / 2)]!, compiler }
  })
  const base = rows[0]!
  const k = (n: number) => `${(n / 1000).toFixed(1)}k`
  console.log(
    `\nInstructions per tool step in the counted runs, on the main thread (node --single-threaded: V8's GC included), V8's optimizing compilers apart (what is still being optimized after the warm-up); over ${base.variant}.\n`,
  )
  console.log(
    `| variant | instructions per tool step${repeat > 1 ? ` (${repeat} counts)` : ''} | × ${base.variant} | the optimizing compilers |`,
  )
  console.log('| --- | ---: | ---: | ---: |')
  for (const r of rows) {
    const spread = repeat > 1 ? ` (${r.work.map(k).join(', ')})` : ''
    console.log(`| ${r.variant} | ${k(r.median)}${spread} | ${(r.median / base.median).toFixed(3)}x | ${k(r.compiler)} |`)
  }
} finally {
  if (values.keep === undefined) rmSync(dir, { recursive: true, force: true })
}
