/**
 * The durable checkpoint scenario's store variant in a loop (one run of N tool steps over HTTP,
 * the bench model in a child process), to be run under the V8 profiler, with every store call
 * counted and timed:
 *
 *   node --cpu-prof --cpu-prof-dir=/tmp/signalbox-prof --import tsx bench/profile-durable.ts file
 *   node --import tsx bench/profile-categories.ts /tmp/signalbox-prof/<file>.cpuprofile --steps <tool steps it printed>
 *
 * Variants: none, file (default), file-nofsync, memory. Options: --steps 20, --seconds 8.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { parseArgs } from 'node:util'
import { createAgent, OpenAIProvider } from '@signalbox/core'
import { FileRunStore, MemoryRunStore, type RunStore } from '@signalbox/core/store'
import { startBenchServer } from './lib/model-server.ts'
import { runAgent } from './lib/signalbox.ts'
import { modelFor, noopTool } from './lib/workload.ts'

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { steps: { type: 'string', default: '20' }, seconds: { type: 'string', default: '8' } },
})
const id = positionals[0] ?? 'file'
const steps = Number(values.steps)
const dir = mkdtempSync(path.join(os.tmpdir(), 'profile-durable-'))
const stores: Record<string, () => RunStore | undefined> = {
  none: () => undefined,
  file: () => new FileRunStore({ directory: dir }),
  'file-nofsync': () => new FileRunStore({ directory: dir, fsync: false }),
  memory: () => new MemoryRunStore(),
}
const make = stores[id]
if (!make) throw new Error(`unknown variant "${id}"`)

/** Counts and times every call of the store's methods. */
const calls = new Map<string, { n: number; ns: bigint }>()
function counted(store: RunStore): RunStore {
  return new Proxy(store, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver)
      if (typeof value !== 'function') return value
      return async (...args: unknown[]) => {
        const started = process.hrtime.bigint()
        try {
          return await value.apply(target, args)
        } finally {
          const name =
            String(key) +
            (key === 'save' || key === 'appendMessages'
              ? (args[1] as { sync?: boolean })?.sync === false
                ? ' (unsynced)'
                : ' (synced)'
              : '')
          const entry = calls.get(name) ?? { n: 0, ns: 0n }
          entry.n++
          entry.ns += process.hrtime.bigint() - started
          calls.set(name, entry)
        }
      }
    },
  })
}

const server = await startBenchServer('child-process')
try {
  const store = make()
  const agent = createAgent({
    provider: new OpenAIProvider({ baseURL: server.url, model: modelFor(steps), apiKey: 'bench', stream: false }),
    tools: [noopTool],
    maxTurns: steps + 10,
    ...(store ? { store: counted(store) } : {}),
  })
  for (let i = 0; i < 5; i++) await runAgent(agent)
  calls.clear()
  const until = process.hrtime.bigint() + BigInt(Number(values.seconds) * 1e9)
  let total = 0
  const start = process.hrtime.bigint()
  const cpu = process.cpuUsage()
  while (process.hrtime.bigint() < until) total += await runAgent(agent)
  const ns = Number(process.hrtime.bigint() - start)
  const used = process.cpuUsage(cpu)
  console.log(
    `${id}: ${total} tool steps, ${(ns / total / 1000).toFixed(1)} µs per tool step, CPU ${((used.user + used.system) / total).toFixed(0)} µs per step (user ${(used.user / total).toFixed(0)}, system ${(used.system / total).toFixed(0)})`,
  )
  for (const [name, { n, ns: t }] of [...calls].sort()) {
    console.log(`  ${name}: ${(n / total).toFixed(2)} per step, ${(Number(t) / n / 1000).toFixed(1)} µs each`)
  }
} finally {
  await server.close()
  rmSync(dir, { recursive: true, force: true })
}
