/**
 * Instructions per tool step over HTTP (or in process), counted by valgrind's callgrind, to judge
 * the HTTP targets on figures the machine's load does not move: the timed HTTP rows move by
 * ±0.1-0.2x from run to run on a shared machine. Each variant runs in a process of its own twice,
 * for two numbers of runs (`--runs 6,16`, each of `--at-once` runs of `--steps` steps); the
 * difference between the two counts is the work of the extra runs, the process's start and the
 * first runs' warm-up cancelling out.
 *
 * Not precise enough yet to judge a 10% target: counts of one commit still disagree by several
 * percent, because V8's helper threads (the parallel and concurrent GC, code generation outside
 * `v8::internal::compiler::`) and the start's module loading vary by hundreds of millions of
 * instructions from one process to the next. Next: `node --single-threaded` (everything on the main
 * thread, in one order) and instrumentation switched on only for the measured runs
 * (`--instr-atstart=no`, then `callgrind_control -i on`). See docs/benchmarks.md.
 *
 * Reported per tool step, in the steady state: the instructions of every thread but V8's
 * optimizing compiler (the loop, the SDK, Node's HTTP, JSON and the GC, concurrent parts included:
 * the CPU a step costs), and the compiler's apart (code still being optimized: the warm-up's tail,
 * which takes some 3,000 steps to die down). Not split by thread: the GC moves its work between the
 * main thread and its helpers from one run to the next.
 * The built packages are measured (`dist/`, as `pnpm bench` does).
 *
 *   node bench/run.mjs --build-only
 *   node --import tsx bench/instructions.ts openai,floor,signalbox
 *   node --import tsx bench/instructions.ts openai,floor,signalbox --steps 20 --at-once 200 --runs 1,2
 *   node --import tsx bench/instructions.ts signalbox,signalbox-hooks --in-process --steps 20 --runs 100,300
 *
 * Variants: those of the HTTP scenario without the peers (`bench/scenarios/http-loops.ts`), or with
 * `--in-process` those of the in-process scenario (e.g. `signalbox,signalbox-hooks`). Needs
 * `valgrind` (Debian: `apt-get install valgrind`); a 200-step run takes ~15 s under it, the first
 * command ~20 min on 2 cores.
 */
import { execFile, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { httpLoopRunners } from './scenarios/http-loops.ts'
import { inProcessVariants } from './scenarios/in-process.ts'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    runs: { type: 'string', default: '6,16' },
    steps: { type: 'string', default: '200' },
    jobs: { type: 'string', default: '2' },
    'at-once': { type: 'string', default: '1' },
    'in-process': { type: 'boolean', default: false },
    keep: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
})
const where = values['in-process'] ? 'in-process' : 'http'
/** The variants' names (building them opens no connection). */
const VARIANTS =
  where === 'http'
    ? Object.keys(httpLoopRunners({ url: 'http://127.0.0.1:1/v1', steps: 1, withHooks: true }))
    : inProcessVariants(1).map((v) => v.id)
if (values.help) {
  console.log(
    'node --import tsx bench/instructions.ts <variant,...> [--runs 6,16] [--steps 200] [--at-once 1] [--jobs 2]\n' +
      'Instructions per tool step, counted by valgrind (callgrind), of the variants named (the first is the baseline):\n' +
      `  ${VARIANTS.join(', ')}\n` +
      '--runs A,B   the two counts of runs compared (runs before A are its warm-up)\n' +
      '--at-once N  each run is N runs at once (the throughput scenario: --steps 20 --at-once 200 --runs 1,2)\n' +
      '--in-process the in-process variants instead (no HTTP: the ScriptedProvider), e.g. signalbox,signalbox-hooks\n' +
      '--jobs N     processes under valgrind at once (default 2)\n' +
      '--keep DIR   keep the callgrind files there (callgrind_annotate reads them), one per thread',
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
const [fewer, more] = values.runs.split(',').map(Number) as [number, number]
const steps = Number(values.steps)
const atOnce = Number(values['at-once'])
if (!(Number.isInteger(fewer) && Number.isInteger(more) && fewer >= 1 && more > fewer)) {
  console.error('--runs takes two counts of runs, the second larger (e.g. 6,16)')
  process.exit(2)
}
if (!(Number.isInteger(steps) && steps >= 1 && Number.isInteger(atOnce) && atOnce >= 1)) {
  console.error('--steps and --at-once take positive integers')
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
  /** Every instruction of the process, all its threads. */
  total: number
  /** Those of V8's optimizing compiler (its background threads). */
  compiler: number
  steps: number
}

/** A callgrind file's instruction count, and the optimizing compiler's part of it. */
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

/** One process under callgrind (a file per thread): its instruction counts. */
async function count(variant: string, runs: number): Promise<Count> {
  const out = join(dir, `${variant}-${runs}.callgrind`)
  // A kept directory may hold an earlier count's files.
  for (const f of readdirSync(dir)) if (f.startsWith(`${variant}-${runs}.callgrind`)) rmSync(join(dir, f))
  const env = { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${useDist}`.trim() }
  const args = [
    '--tool=callgrind',
    '--separate-threads=yes',
    `--callgrind-out-file=${out}`,
    process.execPath,
    // No major GC starts by chance in one count and not the other (one is some 150M instructions):
    // the old generation is sized so that none starts, and each process ends with a full GC (the
    // child's) that collects what its runs left, so each variant pays for its own garbage.
    '--initial-old-space-size=1024',
    '--expose-gc',
    '--import',
    'tsx',
    child,
    where,
    variant,
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
    p.once('exit', (code) =>
      code === 0 ? resolve(text) : reject(new Error(`${variant} × ${runs} exited with ${code}:\n${errors.slice(-2000)}`)),
    )
  })
  const ran = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as { steps?: number }
  // One file per thread.
  const files = readdirSync(dir).filter((f) => f.startsWith(`${variant}-${runs}.callgrind-`))
  const counts = await Promise.all(files.map(async (f) => ({ f, ...(await annotate(join(dir, f))) })))
  const sum = (pick: (c: (typeof counts)[number]) => number) => counts.reduce((n, c) => n + pick(c), 0)
  return {
    total: sum((c) => c.total),
    compiler: sum((c) => c.compiler),
    steps: ran.steps ?? Number.NaN,
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
  `instructions per tool step ${where === 'http' ? 'over HTTP' : 'in process'} (callgrind): ${variants.join(', ')}; ${fewer} → ${more} runs of ${atOnce === 1 ? '' : `${atOnce} at once × `}${steps} steps, node ${process.version}`,
)
try {
  const tasks = variants.flatMap((v) => [() => count(v, fewer), () => count(v, more)])
  const counts = await pooled(tasks, Number(values.jobs))
  const rows = variants.map((variant, i) => {
    const [a, b] = [counts[2 * i]!, counts[2 * i + 1]!]
    const perStep = (pick: (c: Count) => number) => (pick(b) - pick(a)) / (b.steps - a.steps)
    const compiler = perStep((c) => c.compiler)
    return { variant, compiler, work: perStep((c) => c.total) - compiler }
  })
  const base = rows[0]!
  const k = (n: number) => `${(n / 1000).toFixed(0)}k`
  console.log(
    `\nInstructions per tool step in the steady state: every thread but V8's optimizing compiler (the CPU a step costs), over ${base.variant}; the compiler apart (the warm-up's tail). Counts of one commit still vary by several percent (docs/benchmarks.md).\n`,
  )
  console.log(`| variant | instructions per tool step | × ${base.variant} | the optimizing compiler |`)
  console.log('| --- | ---: | ---: | ---: |')
  for (const r of rows) console.log(`| ${r.variant} | ${k(r.work)} | ${(r.work / base.work).toFixed(3)}x | ${k(r.compiler)} |`)
} finally {
  if (values.keep === undefined) rmSync(dir, { recursive: true, force: true })
}
