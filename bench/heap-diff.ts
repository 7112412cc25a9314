/**
 * What a parked run holds, by object kind: heap snapshots before and after `--runs` runs of one
 * variant park on their model call (5 tool steps in), each after a full GC; prints the per-run
 * difference in count and self size, grouped by node type and name (constructor, closure name,
 * string...), largest first.
 *
 *   node --import tsx bench/heap-diff.ts [--variant signalbox|openai] [--http] [--hooks] [--runs 300] [--core <checkout>] [--top 60] [--detail]
 *
 * `--detail`: plain objects named by their first properties, arrays and contexts by their holder.
 * `--core`: the built core of that checkout (`packages/core/dist`), default this one's.
 */
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseArgs } from 'node:util'
import { writeHeapSnapshot } from 'node:v8'
import OpenAI from 'openai'
import { openaiChat, runBareLoop } from './lib/bare-loops.ts'
import { fullGc, gc } from './lib/measure.ts'
import { startBenchServer } from './lib/model-server.ts'
import { httpParking, type Parking, parkModel } from './lib/parking.ts'
import { FINAL_ANSWER, noopHooks, noopTool, PROMPT } from './lib/workload.ts'
import { parkingModel } from './scenarios/heap.ts'

const { values } = parseArgs({
  options: {
    variant: { type: 'string', default: 'signalbox' },
    http: { type: 'boolean', default: false },
    hooks: { type: 'boolean', default: false },
    runs: { type: 'string', default: '300' },
    core: { type: 'string' },
    top: { type: 'string', default: '60' },
    detail: { type: 'boolean', default: false },
  },
})
if (!gc) throw new Error('needs gc')
const runs = Number(values.runs)
const detail = values.detail
const PARK_AFTER = 5
const core = (await import(
  pathToFileURL(resolve(values.core ?? resolve(import.meta.dirname, '..'), 'packages/core/dist/index.js')).href
)) as {
  createAgent(options: Record<string, unknown>): { run(input: string): Promise<{ output: unknown }> }
  OpenAIProvider: new (options: Record<string, unknown>) => unknown
}
const server = values.http ? await startBenchServer('child-process') : undefined
const model = parkModel(PARK_AFTER)
let parking: Parking
let one: () => Promise<unknown>
const hooks = values.hooks ? { hooks: noopHooks } : {}
if (server) {
  parking = httpParking(server.url)
  if (values.variant === 'openai') {
    const client = new OpenAI({ baseURL: server.url, apiKey: 'bench', maxRetries: 0 })
    one = () => runBareLoop(openaiChat(client, model), PROMPT)
  } else {
    const provider = new core.OpenAIProvider({ baseURL: server.url, model, apiKey: 'bench', stream: false })
    const agent = core.createAgent({ provider, tools: [noopTool], maxTurns: 1000, ...hooks })
    one = () => agent.run(PROMPT)
  }
} else {
  const m = parkingModel(PARK_AFTER)
  parking = m
  const provider = { model: 'parking', complete: (request: { messages: { role: string }[] }) => m.reply(request.messages) }
  const agent = core.createAgent({ provider, tools: [noopTool], maxTurns: 1000, ...hooks })
  one = () => agent.run(PROMPT)
}

type Groups = Map<string, { count: number; size: number }>
/**
 * Groups the snapshot's nodes by type and name; with `--detail`, plain objects also by their
 * first property names, and arrays, closures' contexts and property stores by what holds them.
 */
function groups(file: string): Groups {
  const snap = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } }
    nodes: number[]
    edges: number[]
    strings: string[]
  }
  rmSync(file)
  const fields = snap.snapshot.meta.node_fields
  const types = snap.snapshot.meta.node_types[0]
  const edgeFields = snap.snapshot.meta.edge_fields
  const edgeTypes = snap.snapshot.meta.edge_types[0]
  const [t, n, s, ec] = [
    fields.indexOf('type'),
    fields.indexOf('name'),
    fields.indexOf('self_size'),
    fields.indexOf('edge_count'),
  ]
  const [et, en, eto] = [edgeFields.indexOf('type'), edgeFields.indexOf('name_or_index'), edgeFields.indexOf('to_node')]
  const nodeCount = snap.nodes.length / fields.length
  const label = (i: number) => {
    const type = types[snap.nodes[i * fields.length + t]!]!
    let name = snap.strings[snap.nodes[i * fields.length + n]!]!
    if (type === 'string' || type === 'concatenated string' || type === 'sliced string') name = '(string)'
    else if (type === 'number') name = '(number)'
    else if (name.length > 50) name = `${name.slice(0, 50)}…`
    return `${type}:${name}`
  }
  const props: string[][] = Array.from({ length: nodeCount }, () => [])
  const holder: string[] = new Array(nodeCount)
  if (detail) {
    let e = 0
    for (let i = 0; i < nodeCount; i++) {
      const count = snap.nodes[i * fields.length + ec]!
      for (let k = 0; k < count; k++, e += edgeFields.length) {
        const type = edgeTypes[snap.edges[e + et]!]!
        const to = snap.edges[e + eto]! / fields.length
        const name = type === 'element' || type === 'hidden' ? '[]' : String(snap.strings[snap.edges[e + en]!])
        if (type === 'property' && props[i]!.length < 5) props[i]!.push(name)
        if (holder[to] === undefined && type !== 'weak' && type !== 'shortcut') holder[to] = `${label(i)}.${name}`
      }
    }
  }
  const out: Groups = new Map()
  for (let i = 0; i < nodeCount; i++) {
    let key = label(i)
    if (detail) {
      if (key === 'object:Object') key += `{${props[i]!.join(',')}}`
      else if (!key.startsWith('code')) key += ` <- ${holder[i] ?? '?'}`
    }
    const g = out.get(key) ?? { count: 0, size: 0 }
    g.count++
    g.size += snap.nodes[i * fields.length + s]!
    out.set(key, g)
  }
  return out
}
const snapshot = () => {
  fullGc()
  return writeHeapSnapshot(join(tmpdir(), `heap-diff-${process.pid}-${Date.now()}.heapsnapshot`))
}

const signal = AbortSignal.timeout(300_000)
// Warm once, then the snapshot before and after `runs` runs park.
const warm = one()
await parking.parked(1, signal)
await parking.release(signal)
await warm
const beforeFile = snapshot()
fullGc()
const heapBefore = process.memoryUsage().heapUsed
const pending: Promise<unknown>[] = []
for (let i = 0; i < runs; i++) pending.push(one())
await parking.parked(runs, signal)
fullGc()
const heapAfter = process.memoryUsage().heapUsed
const afterFile = snapshot()
await parking.release(signal)
for (const result of await Promise.all(pending)) {
  const output = (result as { output?: unknown }).output
  if (typeof result !== 'number' && output !== FINAL_ANSWER) throw new Error(`run ended with ${JSON.stringify(output)}`)
}
await server?.close()

// Read only now: the groups of the first snapshot would be in the second.
const [before, after] = [groups(beforeFile), groups(afterFile)]
const rows: { key: string; count: number; size: number }[] = []
for (const [key, a] of after) {
  const b = before.get(key) ?? { count: 0, size: 0 }
  if (a.size !== b.size || a.count !== b.count)
    rows.push({ key, count: (a.count - b.count) / runs, size: (a.size - b.size) / runs })
}
rows.sort((x, y) => y.size - x.size)
const total = rows.reduce((sum, r) => sum + r.size, 0)
console.log(
  `${values.variant}${values.http ? ' over HTTP' : ' in process'}${values.hooks ? ' + 5 hooks' : ''}: ${runs} runs parked; heapUsed ${((heapAfter - heapBefore) / runs / 1024).toFixed(2)} KiB per run; snapshot self sizes ${(total / 1024).toFixed(2)} KiB per run`,
)
for (const r of rows.slice(0, Number(values.top)))
  console.log(`${r.size.toFixed(0).padStart(7)} B  ${r.count.toFixed(2).padStart(7)} x  ${r.key}`)
