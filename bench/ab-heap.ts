/**
 * Heap per parked run, this checkout's built core against another checkout's, in ONE process:
 * each round parks `--runs` runs of each variant (on its model call after 5 tool steps) and takes
 * the retained heap after a full GC, variants in turn, order rotated each round; prints the median
 * KiB per run and after / before.
 *
 *   node --import tsx bench/ab-heap.ts --other /path/to/other/checkout [--runs 200] [--rounds 5] [--http] [--hooks]
 *
 * `--http`: over HTTP (`OpenAIProvider`, `stream: false`, scripted server in a child process),
 * beside the `openai`-SDK loop parked the same way; without it, in process (a provider that
 * answers from this process). Both checkouts need `pnpm build` (their `packages/core/dist`).
 */
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import OpenAI from 'openai'
import { openaiChat, runBareLoop } from './lib/bare-loops.ts'
import { gc, median } from './lib/measure.ts'
import { startBenchServer } from './lib/model-server.ts'
import { httpParking, type Parking, parkModel } from './lib/parking.ts'
import { countToolResults, FINAL_ANSWER, noopHooks, noopTool, PROMPT } from './lib/workload.ts'
import { parkedHeap, parkingModel } from './scenarios/heap.ts'

const { values } = parseArgs({
  options: {
    other: { type: 'string' },
    runs: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '5' },
    http: { type: 'boolean', default: false },
    hooks: { type: 'boolean', default: false },
  },
})
if (values.other === undefined) throw new Error('--other <checkout> is required')
if (!gc) throw new Error('needs gc')
const runs = Number(values.runs)
const PARK_AFTER = 5

interface Core {
  createAgent(options: Record<string, unknown>): {
    run(input: string): Promise<{ output: unknown; messages: { role: string }[] }>
  }
  OpenAIProvider: new (options: Record<string, unknown>) => unknown
}
const load = async (root: string) => (await import(pathToFileURL(resolve(root, 'packages/core/dist/index.js')).href)) as Core

const cores = { before: await load(values.other), after: await load(resolve(import.meta.dirname, '..')) }
const server = values.http ? await startBenchServer('child-process') : undefined
const model = parkModel(PARK_AFTER)

/** A variant: how to make a parking model (shared by its runs) and one run against it. */
interface Case {
  id: string
  park: () => { parking: Parking; one: () => Promise<number> }
}
const agentRun = (agent: ReturnType<Core['createAgent']>) => async () => {
  const result = await agent.run(PROMPT)
  if (result.output !== FINAL_ANSWER) throw new Error(`run ended with ${JSON.stringify(result.output)}`)
  return countToolResults(result.messages)
}
const hooks = values.hooks ? { hooks: noopHooks } : {}
const cases: Case[] = []
if (server) {
  const parking = httpParking(server.url)
  const client = new OpenAI({ baseURL: server.url, apiKey: 'bench', maxRetries: 0 })
  cases.push({ id: 'openai-SDK loop', park: () => ({ parking, one: () => runBareLoop(openaiChat(client, model), PROMPT) }) })
  for (const [id, core] of Object.entries(cores)) {
    const provider = new core.OpenAIProvider({ baseURL: server.url, model, apiKey: 'bench', stream: false })
    const agent = core.createAgent({ provider, tools: [noopTool], maxTurns: 1000, ...hooks })
    cases.push({ id, park: () => ({ parking, one: agentRun(agent) }) })
  }
} else {
  for (const [id, core] of Object.entries(cores)) {
    cases.push({
      id,
      park: () => {
        const m = parkingModel(PARK_AFTER)
        const provider = { model: 'parking', complete: (request: { messages: { role: string }[] }) => m.reply(request.messages) }
        const agent = core.createAgent({ provider, tools: [noopTool], maxTurns: 1000, ...hooks })
        return { parking: m, one: agentRun(agent) }
      },
    })
  }
}

const kib = new Map<string, number[]>(cases.map((c) => [c.id, []]))
const rounds = Number(values.rounds)
for (let round = 0; round < rounds; round++) {
  for (let i = 0; i < cases.length; i++) {
    const c = cases[(i + round) % cases.length]!
    const { parking, one } = c.park()
    kib.get(c.id)!.push(await parkedHeap(runs, parking, one, PARK_AFTER))
  }
}
await server?.close()
console.log(
  `heap per parked run, ${values.http ? 'over HTTP (stream: false)' : 'in process'}${values.hooks ? ', five no-op hooks' : ''}, ${runs} runs, ${rounds} rounds, KiB (median; all)`,
)
for (const [id, all] of kib)
  console.log(`${id.padEnd(16)} ${median(all).toFixed(2)}   [${all.map((v) => v.toFixed(1)).join(' ')}]`)
const [b, a] = [median(kib.get('before')!), median(kib.get('after')!)]
console.log(`after / before: ${(a / b).toFixed(3)}x (${(a - b).toFixed(2)} KiB)`)
