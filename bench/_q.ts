import { createAgent } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { modelFor, noopTool, PROMPT, responder } from './lib/workload.ts'
const steps = 10
const provider = new ScriptedProvider({ script: responder, model: modelFor(steps), record: false })
const agent = createAgent({ id: 'worker', provider, tools: [noopTool], maxTurns: steps + 2 })
for (const n of [10, 100, 300, 1000]) {
  for (let rep = 0; rep < 2; rep++) {
    const t0 = performance.now()
    await Promise.all(Array.from({ length: n }, () => agent.run(PROMPT)))
    const ms = performance.now() - t0
    console.log(n, Math.round(ms), 'ms', Math.round((n * steps) / (ms / 1000)), 'steps/s')
  }
}
