/**
 * `pnpm exec tsx bench/checkpoint.ts [steps] [rounds]`: what durable runs cost per tool step, over
 * HTTP against the bench model server (a child process): the same 200-step run with no store,
 * with `FileRunStore` (fsync on, the default) and with `fsync: false`, interleaved, medians.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createAgent, OpenAIProvider } from '@signalbox/core'
import { FileRunStore, MemoryRunStore, type RunStore } from '@signalbox/core/store'
import { startBenchServer } from './lib/model-server.ts'
import { countToolResults, modelFor, noopTool, PROMPT } from './lib/workload.ts'

const steps = Number(process.argv[2] ?? 200)
const rounds = Number(process.argv[3] ?? 5)
const server = await startBenchServer('child-process')
const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-checkpoint-'))

const variants: { id: string; store: () => RunStore | undefined }[] = [
  { id: 'no store', store: () => undefined },
  { id: 'file store, fsync', store: () => new FileRunStore({ directory: path.join(dir, 'fsync') }) },
  { id: 'file store, no fsync', store: () => new FileRunStore({ directory: path.join(dir, 'nofsync'), fsync: false }) },
  { id: 'memory store', store: () => new MemoryRunStore() },
]

async function once(store: RunStore | undefined): Promise<number> {
  const agent = createAgent({
    provider: new OpenAIProvider({ baseURL: server.url, model: modelFor(steps), apiKey: 'bench', stream: false }),
    tools: [noopTool],
    maxTurns: steps + 10,
    ...(store ? { store } : {}),
  })
  const started = process.hrtime.bigint()
  const result = await agent.run(PROMPT)
  const ns = Number(process.hrtime.bigint() - started)
  if (countToolResults(result.messages) !== steps) throw new Error('wrong number of steps')
  return ns / steps / 1e6
}

const samples = new Map<string, number[]>(variants.map((v) => [v.id, []]))
await once(undefined) // warm-up
for (let round = 0; round < rounds; round++) {
  for (const variant of variants) samples.get(variant.id)?.push(await once(variant.store()))
}
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number
const base = median(samples.get('no store') as number[])
console.log(`${steps} tool steps over HTTP, ${rounds} rounds, median ms per step (ratio to no store)`)
for (const [id, values] of samples)
  console.log(`  ${id.padEnd(22)} ${median(values).toFixed(3)} ms  ${(median(values) / base).toFixed(2)}x`)
await server.close()
rmSync(dir, { recursive: true, force: true })
