/**
 * What durable runs cost.
 * - Checkpointing per tool step over HTTP (the bench model server): the same run with no store,
 *   with `FileRunStore` (fsync at the durable points: before each tool's side effect, on entering a
 *   wait, at the end; see docs/durability.md), with `fsync: false`, and with `KvRunStore` on the
 *   local NATS server when one answers. Ratios against no store, from the same run.
 * - Resuming parked runs: a child process parks N runs on approvals in a FileRunStore and is
 *   killed (SIGKILL); `agent.resumeAll()` in this process lists, claims and restores them, and each
 *   shows its request again. Timed until the last request is shown.
 */
import { closeSync, fdatasync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import { type Agent, createAgent, OpenAIProvider, type Reviewer } from '@signalbox/core'
import { FileRunStore, type RunStore } from '@signalbox/core/store'
import { ScriptedProvider } from '@signalbox/core/testing'
import { startCrashChild } from '../../test/support/crash-harness.ts'
import { NATS_URL } from '../../test/support/env.ts'
import { measureInterleaved, type Variant } from '../lib/measure.ts'
import { PARKED_AGENT, PARKED_HOST, payTool, storeAt } from '../lib/parked-runs.ts'
import { buildRows, type Check, rowById, type Table } from '../lib/report.ts'
import { runAgent } from '../lib/signalbox.ts'
import { modelFor, noopTool } from '../lib/workload.ts'
import type { ScenarioOptions } from './options.ts'

/** Target: checkpointing with the file store adds at most 15 % per tool step over HTTP. */
export const CHECKPOINT_MAX_RATIO = 1.15
/** Group commit: 200 durable runs at once keep at least 80 % of the store-less throughput. */
export const CONCURRENT_MIN_RATIO = 0.8
/** Target: 1,000 runs parked on approvals resume in under 5 s. */
export const RESUME_MAX_SECONDS = 5

const syncData = promisify(fdatasync)

/**
 * `delayMs`: the model takes this long per answer (a hosted model takes hundreds of ms; the bench
 * model otherwise answers in about one), to see the store's cost against a realistic step. Then
 * only no store and the file store are measured.
 */
export async function checkpointScenario(url: string, steps: number, options: ScenarioOptions, delayMs?: number): Promise<Table> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-checkpoint-'))
  let bus: NatsBus | undefined
  try {
    if (delayMs !== undefined) throw new Error('no KV row with a slow model')
    bus = await connectNatsBus({ servers: NATS_URL, name: 'bench-checkpoint', prefix: `bench${process.pid}.v1` })
  } catch {
    bus = undefined // no local NATS server: the KV row is left out
  }
  const bucket = `bench_runs_${process.pid}`
  let floorFd: number | undefined
  try {
    const agentOptions = () => ({
      provider: new OpenAIProvider({ baseURL: url, model: modelFor(steps, delayMs), apiKey: 'bench', stream: false }),
      tools: [noopTool],
      maxTurns: steps + 10,
    })
    const agent = (store?: RunStore): Agent => createAgent({ ...agentOptions(), ...(store ? { store } : {}) })
    const run = (a: Agent) => async () => {
      const ran = await runAgent(a)
      if (ran !== steps) throw new Error(`expected ${steps} tool steps, ran ${ran}`)
      return ran
    }
    // The floor of any store that makes one write durable per step: the store-less run with one
    // append of a checkpoint-sized record and its fdatasync before each tool runs, on the same disk,
    // awaited where the store's synced write is (a hook). Made after the run, back to back, the same
    // syncs cost ~40% less a step than they do between a step's network waits.
    floorFd = openSync(path.join(dir, 'floor.log'), 'a')
    const fd = floorFd
    const record = Buffer.from(`${'x'.repeat(2047)}\n`)
    const withSyncedWrites = (): Agent =>
      createAgent({
        ...agentOptions(),
        hooks: {
          beforeToolExecution: async () => {
            writeSync(fd, record)
            await syncData(fd)
          },
        },
      })
    const variants: Variant[] = [
      { id: 'none', label: 'no store', run: run(agent()) },
      ...(delayMs === undefined
        ? [
            {
              id: 'fsync-floor',
              label: 'no store + one 2 KB append & fdatasync before each tool (floor)',
              run: run(withSyncedWrites()),
            },
          ]
        : []),
      {
        id: 'file',
        label: 'FileRunStore (fsync at durable points, group commit)',
        run: run(agent(new FileRunStore({ directory: path.join(dir, 'fsync') }))),
      },
      ...(delayMs === undefined
        ? [
            {
              id: 'file-own-sync',
              label: "FileRunStore, groupCommit: false (each synced write flushes its run's log)",
              run: run(agent(new FileRunStore({ directory: path.join(dir, 'own-sync'), groupCommit: false }))),
            },
          ]
        : []),
      ...(delayMs === undefined
        ? [
            {
              id: 'file-nofsync',
              label: 'FileRunStore, fsync: false',
              run: run(agent(new FileRunStore({ directory: path.join(dir, 'nofsync'), fsync: false }))),
            },
          ]
        : []),
      ...(bus
        ? [
            {
              id: 'kv',
              label: 'KvRunStore (local NATS)',
              run: run(agent(new KvRunStore({ connection: bus.connection, bucket }))),
            },
          ]
        : []),
    ]
    const measured = await measureInterleaved(variants, {
      rounds: options.rounds,
      warmup: options.warmup,
      warmupMs: options.warmupMs ?? 0,
      minSampleMs: 0,
      onSample: options.progress,
    })
    const rows = buildRows(measured, 'us-per-step', 'none')
    const ratio = (id: string) => rowById(rows, id).median / rowById(rows, 'none').median
    const checks: Check[] = [
      {
        name: `checkpointing, FileRunStore: cost per tool step over HTTP vs no store (model answers in ${delayMs === undefined ? '~1 ms' : `${delayMs} ms`})`,
        value: ratio('file'),
        unit: 'x',
        target: `<= ${CHECKPOINT_MAX_RATIO}x`,
        pass: ratio('file') <= CHECKPOINT_MAX_RATIO,
      },
    ]
    return {
      id: `checkpoint-${steps}${delayMs === undefined ? '' : `-d${delayMs}`}`,
      title: `Durable runs: checkpointing, one run of ${steps} tool steps over HTTP${delayMs === undefined ? '' : `, the model answering in ${delayMs} ms`}`,
      note: `Per tool step, median of ${options.rounds} interleaved rounds, ratios against the same agent without a store. The bench model answers in about a millisecond, so the store's fixed cost per step (one synced write before each tool runs: one record appended to the run's log and one fdatasync; one unsynced write after it) is compared with a step that costs almost nothing else; with a real model (hundreds of ms per call) the same milliseconds are a few percent.`,
      metric: 'us-per-step',
      baseline: 'none',
      rows,
      checks,
    }
  } finally {
    if (floorFd !== undefined) closeSync(floorFd)
    if (bus) {
      await bus.connection.request(`$JS.API.STREAM.DELETE.KV_${bucket}`).catch(() => {})
      await bus.close()
    }
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Many durable runs at once over HTTP: `runs` runs of `steps` tool steps start together, each a
 * run of the same agent definition, with no store, with the file store (group commit: one flush of
 * the commit log serves every run waiting on it), with a flush of each run's own log, with
 * `fsync: false`, and with the KV store on the local NATS server when one answers. Throughput in
 * tool steps per second, ratios against no store, from the same run.
 */
export async function concurrentDurableScenario(
  url: string,
  runs: number,
  steps: number,
  options: ScenarioOptions,
): Promise<Table> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-durable-many-'))
  let bus: NatsBus | undefined
  try {
    bus = await connectNatsBus({ servers: NATS_URL, name: 'bench-durable-many', prefix: `bench${process.pid}.many` })
  } catch {
    bus = undefined
  }
  const bucket = `bench_many_${process.pid}`
  try {
    const agent = (store?: RunStore): Agent =>
      createAgent({
        provider: new OpenAIProvider({ baseURL: url, model: modelFor(steps), apiKey: 'bench', stream: false }),
        tools: [noopTool],
        maxTurns: steps + 10,
        ...(store ? { store } : {}),
      })
    const batch = (a: Agent) => async () => {
      const all: Promise<number>[] = []
      for (let i = 0; i < runs; i++) all.push(runAgent(a))
      let total = 0
      for (const ran of await Promise.all(all)) total += ran
      if (total !== runs * steps) throw new Error(`expected ${runs * steps} tool steps, ran ${total}`)
      return total
    }
    const variants: Variant[] = [
      { id: 'none', label: 'no store', run: batch(agent()) },
      {
        id: 'file',
        label: 'FileRunStore, group commit (default)',
        run: batch(agent(new FileRunStore({ directory: path.join(dir, 'group') }))),
      },
      {
        id: 'file-own-sync',
        label: "FileRunStore, groupCommit: false (a flush of each run's log)",
        run: batch(agent(new FileRunStore({ directory: path.join(dir, 'own'), groupCommit: false }))),
      },
      {
        id: 'file-nofsync',
        label: 'FileRunStore, fsync: false',
        run: batch(agent(new FileRunStore({ directory: path.join(dir, 'nofsync'), fsync: false }))),
      },
      ...(bus
        ? [
            {
              id: 'kv',
              label: 'KvRunStore (local NATS)',
              run: batch(agent(new KvRunStore({ connection: bus.connection, bucket }))),
            },
          ]
        : []),
    ]
    const measured = await measureInterleaved(variants, {
      rounds: options.rounds,
      warmup: options.warmup,
      warmupMs: options.warmupMs ?? 0,
      minSampleMs: 0,
      onSample: options.progress,
    })
    const rows = buildRows(measured, 'steps-per-second', 'none')
    const ratio = rowById(rows, 'file').median / rowById(rows, 'none').median
    return {
      id: `durable-concurrent-${runs}`,
      title: `Durable runs: ${runs} runs of ${steps} tool steps at once over HTTP`,
      note: `Throughput (higher is better), median of ${options.rounds} interleaved rounds; ${runs * steps} tool steps per sample, every run writing to the same store. The durability rule is the same in every synced variant: a tool starts only once its \`started\` record is on disk; group commit makes that one flush of the store's commit log for every run waiting on it.`,
      metric: 'steps-per-second',
      baseline: 'none',
      rows,
      checks:
        runs >= 200
          ? [
              {
                name: `durable runs, FileRunStore: ${runs} runs at once over HTTP vs no store (throughput ratio)`,
                value: ratio,
                unit: 'x',
                target: `>= ${CONCURRENT_MIN_RATIO}x`,
                pass: ratio >= CONCURRENT_MIN_RATIO,
              },
            ]
          : [],
    }
  } finally {
    if (bus) {
      await bus.connection.request(`$JS.API.STREAM.DELETE.KV_${bucket}`).catch(() => {})
      await bus.close()
    }
    rmSync(dir, { recursive: true, force: true })
  }
}

export interface ResumeFigures {
  store: string
  runs: number
  /** `resumeAll()`: listed, claimed, transcripts read, snapshots restored. */
  resumeAllMs: number
  /** Until every resumed run has shown its request again (re-attached). */
  reattachedMs: number
  target: string
  pass: boolean
}

/** `kv`: the runs are kept in a JetStream KV bucket on the local NATS server (deleted after). */
export async function resumeScenario(count: number, kind: 'file' | 'kv' = 'file'): Promise<ResumeFigures> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-resume-'))
  const bucket = `bench_resume_${process.pid}`
  const where = kind === 'kv' ? `kv:${bucket}` : dir
  let opened: Awaited<ReturnType<typeof storeAt>> | undefined
  try {
    opened = await storeAt(where, NATS_URL)
    const { store } = opened
    const child = await startCrashChild('bench/lib/parked-runs-child.ts', {
      args: [where, String(count), NATS_URL],
      ready: 'parked',
      readyTimeoutMs: 300_000,
    })
    await child.kill()
    let shown = 0
    let allShown: () => void = () => {}
    const reattached = new Promise<void>((resolve) => {
      allShown = resolve
    })
    const reviewer: Reviewer = {
      review: (_request, { signal }) => {
        if (++shown === count) allShown()
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
      },
    }
    const agent = createAgent({
      id: PARKED_AGENT,
      provider: new ScriptedProvider({ script: [], record: false }),
      tools: [payTool],
      reviewer,
      store,
      hostId: PARKED_HOST,
      leaseMs: 600_000,
      approvalTimeoutMs: 3_600_000,
    })
    const started = process.hrtime.bigint()
    const result = await agent.resumeAll()
    const resumeAllMs = Number(process.hrtime.bigint() - started) / 1e6
    if (result.runs.length !== count || result.errors.length > 0) {
      throw new Error(`resumed ${result.runs.length} of ${count} runs: ${result.errors.map(String).join('; ')}`)
    }
    await reattached
    const reattachedMs = Number(process.hrtime.bigint() - started) / 1e6
    for (const handle of result.runs) handle.cancel('bench over')
    await Promise.allSettled(result.runs.map((handle) => handle.result))
    return {
      store: kind === 'kv' ? 'KvRunStore (local NATS)' : 'FileRunStore',
      runs: count,
      resumeAllMs,
      reattachedMs,
      target: `< ${RESUME_MAX_SECONDS} s`,
      pass: reattachedMs < RESUME_MAX_SECONDS * 1000,
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
    await opened?.close()
  }
}

/** `judged: false` (a quick run) shows each target without a verdict: targets are judged on full runs. */
export function renderResume(rows: ResumeFigures[], judged = true): string {
  return [
    '| store | runs parked on approvals | resumeAll() | until every request is shown again | target |',
    '|---|---|---|---|---|',
    ...rows.map(
      (figures) =>
        `| ${figures.store} | ${figures.runs} | ${(figures.resumeAllMs / 1000).toFixed(2)} s | ${(figures.reattachedMs / 1000).toFixed(2)} s | ${figures.target}${judged ? ` ${figures.pass ? 'PASS' : 'MISS'}` : ''} |`,
    ),
  ].join('\n')
}
