import { createAgent } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { modelFor, noopTool, PROMPT, responder } from './lib/workload.ts'
const steps = 200
const provider = new ScriptedProvider({ script: responder, model: modelFor(steps), record: false })
const agent = createAgent({ id: 'worker', provider, tools: [noopTool], maxTurns: steps + 2 })
for (let rep = 0; rep < 30; rep++) {
  const t0 = performance.now()
  await agent.run(PROMPT)
  const ms = performance.now() - t0
  console.log(Math.round((ms * 1000) / steps), 'us/step')
}
