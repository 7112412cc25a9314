import { createAgent, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { z } from 'zod'
import { fullGc } from './lib/measure.ts'
const provider = new ScriptedProvider({ model: 'x', record: false, script: () => ({ content: 'x' }) })
const book = tool({ name: 'book', description: 'b', schema: z.object({ item: z.number() }), needsApproval: true, execute: async () => 'ok' })
const N = 2000
function measure(label: string, make: (i: number) => unknown) {
  make(-1)
  fullGc()
  const before = process.memoryUsage().heapUsed
  const keep: unknown[] = []
  for (let i = 0; i < N; i++) keep.push(make(i))
  fullGc()
  const after = process.memoryUsage().heapUsed
  console.log(label.padEnd(50), ((after - before) / N / 1024).toFixed(1), 'KiB each')
  return keep
}
measure('createAgent (1 tool)', (i) => createAgent({ id: `a${i + 1}`, provider, tools: [book] }))
measure('createAgent, machine only (agent.machine)', (i) => createAgent({ id: `a${i + 1}`, provider, tools: [book] }).machine)
