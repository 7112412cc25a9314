import { createAgent } from '@signalbox/core'
import { statechartToMermaid } from '../../src/inspect/mermaid.ts'
const agent = createAgent({ provider: { complete: async () => { throw new Error('x') } } as any })
process.stdout.write(statechartToMermaid(agent.machine))
