import { z } from 'zod'
import { createAgent, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
const noop = tool({ name: 'noop', description: 'n', schema: z.object({}), execute: () => 'ok' })
async function once(steps: number) {
  const provider = new ScriptedProvider({ record: false, script: (req, i) => i < steps ? { toolCalls: [{ name: 'noop', arguments: {} }] } : { content: 'done' } })
  const agent = createAgent({ provider, tools: [noop], maxTurns: steps + 5 })
  const t = process.hrtime.bigint()
  await agent.run('go')
  return Number(process.hrtime.bigint() - t) / 1000 / steps
}
for (let i = 0; i < 5; i++) await once(50)
const r = []
for (let i = 0; i < 10; i++) r.push(await once(200))
console.log('µs/step', r.map(x => x.toFixed(0)).join(' '))
