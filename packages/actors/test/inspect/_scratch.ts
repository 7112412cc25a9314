import { createAgent, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { z } from 'zod'
import { createStatelyInspector } from '../../src/inspect/inspector.ts'

const events: any[] = []
const inspector = createStatelyInspector({ runtimeId: 'rt1', send: (e) => events.push(e), includeContents: process.argv[2] === 'c' })
const lookup = tool({ name: 'lookup', description: 'x', schema: z.object({ q: z.string() }), needsApproval: true, execute: async () => 'DNI 12.345.678' })
const agent = createAgent({
  provider: new ScriptedProvider({ script: [{ toolCalls: [{ name: 'lookup', arguments: { q: 'SECRET-ARG' } }] }, { content: 'FINAL-SECRET' }] }),
  tools: [lookup],
  hooks: { afterToolExecution: async ({ output }) => output.replace(/DNI [\d.]+/, 'DNI ***') },
  reviewer: { review: async (r) => ({ requestId: r.requestId, callId: r.callId, digest: r.digest, approved: true, reviewer: 'x', decidedAt: Date.now() }) } as any,
  inspect: inspector.inspect,
})
const r = await agent.run('hello SECRET-INPUT')
await new Promise((r) => setTimeout(r, 10))
for (const e of events) console.log(e.type, e.sessionId, e.rootId, e.parentId ?? '', e.sourceId ?? '', e.name ?? '', JSON.stringify(e.event ?? '').slice(0, 80), e.snapshot ? JSON.stringify(e.snapshot.value) + ' ' + e.snapshot.status : '')
const s = JSON.stringify(events)
console.log(events.length, s.length, ['SECRET', '12.345', 'DNI'].map((k) => [k, s.includes(k)]))
console.log(events.find((e) => e.type === '@xstate.actor').definition.length)
console.log(JSON.stringify(events.filter(e=>e.type==='@xstate.snapshot').at(-1)).slice(0,1500))
