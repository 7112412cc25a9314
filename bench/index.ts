/**
 * `pnpm bench`: signalbox against hand-written loops, per tool step, in one process and one run.
 * `pnpm bench` (bench/run.mjs) builds the packages first and measures the built ones (dist/), as
 * users run them; `pnpm bench --src` measures the TypeScript sources through tsx.
 *
 *   pnpm bench                      every scenario (about 10 minutes on 2 cores)
 *   pnpm bench --quick              smoke mode: every variant, peers included, small sizes (figures, no verdicts)
 *   pnpm bench --json results.json  also write every sample as JSON
 *   pnpm bench --markdown out.md    also write the tables as Markdown (for BENCHMARKS.md)
 *   pnpm bench --only in-process,xstate,heap,http,concurrency   (the loop's own cost)
 *   pnpm bench --only approval      a remote approval's round trip over NATS
 *   pnpm bench --only pickup        pick-up of pending approvals after a reviewer kill -9 / server restart
 *   pnpm bench --only tracing       OpenTelemetry tracing on and off, per tool step
 *   pnpm bench --only durable       checkpoint cost per tool step by store, 200 durable runs at once, resuming 1,000 parked runs
 *   pnpm bench --only tree-cluster  1,000 run trees on a 3-node cluster, a host and the stream leader killed: takeover and time to finish
 *   pnpm bench --server in-process  model server in this process (default: a child process)
 *   pnpm bench --rounds 9
 *
 * See BENCHMARKS.md for what is measured and the figures.
 */
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { parseArgs } from 'node:util'
import { gc } from './lib/measure.ts'
import { startBenchServer } from './lib/model-server.ts'
import { type Check, renderChecks, renderTable, type Table } from './lib/report.ts'
import { approvalLatencyScenario, renderLatency } from './scenarios/approval-latency.ts'
import { httpConcurrencyScenario, inProcessConcurrencyScenario } from './scenarios/concurrency.ts'
import { checkpointScenario, concurrentDurableScenario, renderResume, resumeScenario } from './scenarios/durable.ts'
import { heapScenario, httpHeapScenario } from './scenarios/heap.ts'
import { httpLongRunScenario } from './scenarios/http.ts'
import { inProcessScenario } from './scenarios/in-process.ts'
import type { ScenarioOptions } from './scenarios/options.ts'
import { pickupScenario, renderPickup } from './scenarios/pickup.ts'
import { scaleMemoryScenario, scaleThroughputScenario } from './scenarios/scale.ts'
import { tracingScenario } from './scenarios/tracing.ts'
import { renderTreeCluster, treeClusterScenario } from './scenarios/tree-cluster.ts'
import { xstateFloorScenario } from './scenarios/xstate-floor.ts'

const SCENARIOS = [
  'in-process',
  'xstate',
  'heap',
  'http',
  'concurrency',
  'scale',
  'approval',
  'pickup',
  'tracing',
  'durable',
  'tree-cluster',
] as const
type ScenarioName = (typeof SCENARIOS)[number]

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    json: { type: 'string' },
    markdown: { type: 'string' },
    only: { type: 'string' },
    server: { type: 'string', default: 'child-process' },
    rounds: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
})

if (args.help) {
  console.log(
    `pnpm bench [--quick] [--json <file>] [--markdown <file>] [--only ${SCENARIOS.join(',')}] [--server child-process|in-process] [--rounds N]`,
  )
  process.exit(0)
}

const only = new Set<ScenarioName>(
  args.only
    ? args.only.split(',').map((name) => {
        if (!(SCENARIOS as readonly string[]).includes(name))
          throw new Error(`--only: unknown scenario "${name}" (${SCENARIOS.join(', ')})`)
        return name as ScenarioName
      })
    : SCENARIOS,
)
const serverWhere = args.server === 'in-process' ? 'in-process' : 'child-process'
if (args.server !== 'in-process' && args.server !== 'child-process') throw new Error('--server is child-process or in-process')

const quick = args.quick === true
// Sizes: the full run's are the targets' sizes; --quick only proves every path works.
const plan = quick
  ? {
      rounds: 3,
      warmup: 1,
      warmupMs: 100,
      inProcessSteps: [50],
      xstateSteps: 50,
      heapRuns: 100,
      httpHeapRuns: 10,
      // The peers take 5-15 ms a step on a loaded machine: 20 steps keep the HTTP table to seconds.
      httpSteps: 20,
      httpConcurrent: [{ runs: 10, steps: 5 }],
      inProcessConcurrent: 200,
      inProcessConcurrentSteps: 5,
      concurrencyRounds: 2,
      inProcessConcurrencyRounds: 3,
    }
  : {
      rounds: 7,
      warmup: 2,
      // Until V8 has optimized XState's code, a run is 2-3x slower: warm each variant this long.
      warmupMs: 500,
      inProcessSteps: [20, 200],
      xstateSteps: 100,
      heapRuns: 500,
      // Over HTTP every parked run holds a socket on each side: 200 settle the figure.
      httpHeapRuns: 200,
      httpSteps: 200,
      // The throughput target is set on 200 agents × 20 steps (4,000 steps a batch).
      httpConcurrent: [
        { runs: 50, steps: 20 },
        { runs: 200, steps: 20 },
      ],
      inProcessConcurrent: 1000,
      inProcessConcurrentSteps: 5,
      // Batches are long (seconds each): fewer rounds keep the full run near 3 minutes.
      concurrencyRounds: 3,
      // The target is steps/s, not a ratio, and one batch is ~0.3 s: 7 rounds, as in process (with
      // 3 the median moved ±14% from run to run).
      inProcessConcurrencyRounds: 7,
    }
const rounds = args.rounds ? Number(args.rounds) : plan.rounds
if (!Number.isInteger(rounds) || rounds < 1) throw new Error('--rounds must be a positive integer')

const cpuModel = cpus()[0]?.model ?? 'unknown'
const meta = {
  date: new Date().toISOString(),
  command: `pnpm bench${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`,
  node: process.version,
  v8: process.versions.v8,
  platform: `${process.platform} ${process.arch}`,
  nproc: availableParallelism(),
  cpu: cpuModel,
  memoryGiB: Math.round(totalmem() / 2 ** 30),
  quick,
  rounds,
  server: serverWhere,
  gc: gc !== undefined,
  /** The code measured: HEAD, and whether packages/core/src had uncommitted changes. */
  git: gitState(),
  /** What was measured: the built packages (`pnpm bench`) or the TypeScript sources (`pnpm bench --src`). */
  code: codeMeasured(),
  /** 1-minute load average when the run started: other work on the machine shows up here. */
  loadAverageAtStart: Number(loadavg()[0]!.toFixed(2)),
}

console.log(
  `signalbox bench${quick ? ' (--quick: figures only, no verdicts)' : ''}: ${meta.code}, node ${meta.node}, ${meta.nproc} cpus (${cpuModel}), ${rounds} interleaved rounds, load average ${meta.loadAverageAtStart}${meta.git ? `, commit ${meta.git.commit}${meta.git.coreDirty ? ' + uncommitted core changes' : ''}` : ''}`,
)

let dots = 0
const options: ScenarioOptions = {
  quick,
  rounds,
  warmup: plan.warmup,
  warmupMs: plan.warmupMs,
  progress: () => {
    if (process.stderr.isTTY) process.stderr.write(dots++ % 50 === 49 ? '.\n' : '.')
  },
}

const tables: Table[] = []
let mark = process.hrtime.bigint()
function show(table: Table | undefined): void {
  if (!table) return
  const now = process.hrtime.bigint()
  table.seconds = Number(now - mark) / 1e9
  mark = now
  tables.push(table)
  if (dots > 0 && process.stderr.isTTY) process.stderr.write('\n')
  dots = 0
  console.log(`\n## ${table.title} [${table.seconds.toFixed(1)} s]\n${table.note}\n`)
  console.log(renderTable(table, 'text'))
  if (table.checks.length > 0) console.log(`\n${renderChecks(table.checks, 'text', !quick)}`)
}

const started = process.hrtime.bigint()

// signalbox's in-process scenarios first, before anything runs plain XState actors in this process
// (the design's floor, XState's unit costs, the floor rows over HTTP): V8 decides per allocation
// site, for the whole process, what it allocates old from the start, and plain XState actors, whose
// every microstep keeps its actions through young collections, make it decide so for XState's own
// sites, which signalbox's run actors share (docs/benchmarks.md, "XState's recording executor,
// pinned"). After them an in-process figure measures that process, not signalbox.
if (only.has('in-process')) {
  for (const steps of plan.inProcessSteps) show(await inProcessScenario(steps, options))
}
const concurrencyOptions: ScenarioOptions = { ...options, rounds: Math.min(rounds, plan.concurrencyRounds), warmup: 1 }
if (only.has('concurrency')) {
  const inProcessOptions = { ...concurrencyOptions, rounds: Math.min(rounds, plan.inProcessConcurrencyRounds) }
  show(await inProcessConcurrencyScenario(plan.inProcessConcurrent, plan.inProcessConcurrentSteps, inProcessOptions))
}

// Scale: agents parked on approvals (memory) and 1,000 agents at once (throughput).
if (only.has('scale')) {
  if (gc) for (const count of quick ? [200] : [1_000, 10_000]) for (const table of await scaleMemoryScenario([count])) show(table)
  else console.log('\n(memory per waiting agent skipped: gc is not available)')
  show(await scaleThroughputScenario(quick ? 100 : 1_000, quick ? 3 : 5, { ...options, rounds: Math.min(rounds, 3), warmup: 1 }))
}

// Tracing on (in-memory exporter) and off, per tool step.
if (only.has('tracing')) show(await tracingScenario(quick ? 50 : 100, options))

if (only.has('xstate')) show(await xstateFloorScenario(plan.xstateSteps, options))
if (only.has('heap')) {
  if (gc) show(await heapScenario(plan.heapRuns, 5))
  else console.log('\n(heap per parked run skipped: gc is not available)')
}
if (only.has('http') || only.has('concurrency') || (only.has('heap') && gc)) {
  const server = await startBenchServer(serverWhere)
  try {
    if (only.has('heap') && gc) show(await httpHeapScenario(server.url, plan.httpHeapRuns, 5, serverWhere))
    // One 200-step run per sample is long enough to need only one warm-up run.
    if (only.has('http')) show(await httpLongRunScenario(server.url, plan.httpSteps, { ...options, warmup: 1 }))
    if (only.has('concurrency')) {
      for (const { runs, steps } of plan.httpConcurrent) {
        show(await httpConcurrencyScenario(server.url, runs, steps, concurrencyOptions))
      }
    }
  } finally {
    await server.close()
  }
}

// Durable runs: checkpointing per tool step by store (over HTTP), and resuming runs parked on approvals.
let resume: Awaited<ReturnType<typeof resumeScenario>>[] | undefined
if (only.has('durable')) {
  const server = await startBenchServer(serverWhere)
  try {
    show(await checkpointScenario(server.url, quick ? 20 : 200, { ...options, warmup: 1 }))
    // The same against a step that takes what a fast hosted model takes (real ones take longer).
    show(await checkpointScenario(server.url, quick ? 5 : 20, { ...options, warmup: 1 }, 50))
    // Many durable runs at once: what group commit is for.
    show(
      await concurrentDurableScenario(server.url, quick ? 20 : 200, quick ? 5 : 20, {
        ...options,
        rounds: quick ? 2 : Math.max(5, Math.min(rounds, 9)),
        warmup: 1,
      }),
    )
  } finally {
    await server.close()
  }
  const count = quick ? 100 : 1_000
  resume = [await resumeScenario(count, 'file')]
  // The KV store when a local NATS server answers (as the KV row of the checkpoint table).
  try {
    resume.push(await resumeScenario(count, 'kv'))
  } catch (error) {
    console.log(`(KV resume skipped: ${String(error)})`)
  }
  console.log(`\n## Resuming ${count} runs parked on approvals\n`)
  console.log(renderResume(resume, !quick))
}

// A remote approval's round trip over NATS, next to a bare request/reply in the same run.
let approvalLatency: Awaited<ReturnType<typeof approvalLatencyScenario>> | undefined
if (only.has('approval')) {
  const count = quick ? 100 : 1_000
  approvalLatency = await approvalLatencyScenario(count)
  console.log(`\n## Approval round trip over NATS (${count} sequential approvals)\n`)
  console.log(renderLatency(approvalLatency))
}

// Pick-up: how soon pending approvals are picked up after a reviewer kill -9 and a server restart.
let treeCluster: Awaited<ReturnType<typeof treeClusterScenario>> | undefined
if (only.has('tree-cluster')) {
  const parents = quick ? 100 : 1_000
  console.log(`\n## Run trees on a 3-node cluster: ${parents} parents, three hosts, one host and the stream leader killed\n`)
  treeCluster = await treeClusterScenario(parents, (line) => console.error(line))
  console.log(renderTreeCluster(treeCluster))
}

let pickup: Awaited<ReturnType<typeof pickupScenario>> | undefined
if (only.has('pickup')) {
  const count = quick ? 50 : 200
  pickup = await pickupScenario(count)
  console.log(`\n## Pick-up after a fault (${count} pending approvals, private nats-server)\n`)
  console.log(renderPickup(pickup))
}

const seconds = Number(process.hrtime.bigint() - started) / 1e9
const checks: Check[] = tables.flatMap((t) => t.checks)
if (checks.length > 0) {
  const judged = quick ? ' (quick run: figures only; targets are judged on a full run, `pnpm bench` without --quick)' : ''
  console.log(`\n## Targets${judged}\n${renderChecks(checks, 'text', !quick)}`)
}
const loadAverageAtEnd = Number(loadavg()[0]!.toFixed(2))
console.log(
  `\nfinished in ${seconds.toFixed(1)} s (model server: ${serverWhere}; load average ${meta.loadAverageAtStart} → ${loadAverageAtEnd})`,
)

if (args.markdown) {
  const sections = tables.map((t) => {
    const checks = t.checks.length > 0 ? `\n\n${renderChecks(t.checks, 'markdown', !quick)}` : ''
    return `### ${t.title}\n\n${t.note.replaceAll('\n', ' ')}\n\n${renderTable(t, 'markdown')}${checks}\n`
  })
  const code = meta.git ? ` · commit ${meta.git.commit}${meta.git.coreDirty ? ' (packages/core/src modified)' : ''}` : ''
  const header = `Command: \`${meta.command}\` · ${meta.date}${code} · node ${meta.node} · ${meta.nproc} cpus (${meta.cpu}) · ${rounds} rounds · model server: ${serverWhere} · load average ${meta.loadAverageAtStart} → ${loadAverageAtEnd} · ${seconds.toFixed(0)} s\n`
  writeFileSync(args.markdown, `${header}\n${sections.join('\n')}`)
  console.log(`tables written to ${args.markdown}`)
}
if (args.json) {
  writeFileSync(
    args.json,
    `${JSON.stringify({ meta: { ...meta, seconds, loadAverageAtEnd }, tables, approvalLatency, pickup, resume, treeCluster }, null, 2)}\n`,
  )
  console.log(`results written to ${args.json}`)
}

/** Where `@signalbox/core` resolves from in this process: its build or its sources. */
function codeMeasured(): string {
  const core = import.meta.resolve('@signalbox/core')
  return core.includes('/dist/') ? 'built packages (dist/)' : 'TypeScript sources (tsx)'
}

function gitState(): { commit: string; coreDirty: boolean } | undefined {
  try {
    const git = (...a: string[]) => execFileSync('git', a, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    return {
      commit: git('rev-parse', '--short', 'HEAD'),
      coreDirty: git('status', '--porcelain', '--', 'packages/core/src').length > 0,
    }
  } catch {
    return undefined
  }
}
