import { createAgent } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { modelFor, noopHooks, noopTool, responder } from './lib/workload.ts'

for (const hooks of [false, true]) {
  const counts = new Map<string, number>()
  const provider = new ScriptedProvider({ script: responder, model: modelFor(100), record: false })
  const agent = createAgent({
    provider,
    tools: [noopTool],
    maxTurns: 1000,
    ...(hooks ? { hooks: noopHooks } : {}),
    inspect: (e: any) => {
      const k = e.type === '@xstate.actor' ? 'actor' : e.type
      counts.set(k, (counts.get(k) ?? 0) + 1)
    },
  })
  await agent.run('go')
  console.log(hooks ? 'hooks' : 'plain', Object.fromEntries([...counts].map(([k, v]) => [k, (v / 100).toFixed(2)])))
}
