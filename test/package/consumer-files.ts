/**
 * The files a consumer project of the packed packages is made of, as a user would write them:
 * what consumer.test.ts type-checks and runs.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT, type ZodLine } from './installed.ts'

/** The first ```ts block of the README, unchanged. */
export function readmeFirstExample(): string {
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')
  const match = /```ts\n([\s\S]*?)```/.exec(readme)
  if (!match?.[1]) throw new Error('README.md has no ```ts code block')
  return match[1]
}

export const CONSUMER_TS = `import { createAgent, type RunResult, tool, ToolError } from '@signalbox/core'
import { createInProcessBus, type Bus } from '@signalbox/core/bus'
import { decodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'
import { startScriptedModelServer, type Scripts } from '@signalbox/core/testing'
import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { createLocalInspector } from '@signalbox/actors/inspect'
import { connectNatsBus, type NatsBusOptions } from '@signalbox/actors/nats'
import { createAgentSystem } from '@signalbox/actors/system'
import { defineAgentModule } from '@signalbox/cli'
import { mcpTools } from '@signalbox/mcp'
import { z } from 'zod'

const add = tool({
  name: 'add',
  description: 'Adds two numbers.',
  schema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }) => {
    const sum: number = a + b
    return sum
  },
})
const bus: Bus = createInProcessBus()
const scripts: Scripts = { m: [{ content: 'hi' }] }
const options: NatsBusOptions = { servers: 'nats://127.0.0.1:4222' }
export const used = [add, bus, scripts, options, createAgent, ToolError, decodeMessage, PROTOCOL_VERSION, startScriptedModelServer,
  remoteReviewer, serveReviewer, createLocalInspector, connectNatsBus, createAgentSystem, defineAgentModule, mcpTools]
export async function output(result: Promise<RunResult>): Promise<string> {
  return (await result).output
}
`

export const AGENT_MODULE_TS = `import { defineAgentModule } from '@signalbox/cli'
import { tool } from '@signalbox/core'
import { z } from 'zod'

const add = tool({
  name: 'add',
  description: 'Adds two numbers.',
  schema: z.object({ a: z.number(), b: z.number() }),
  execute: ({ a, b }: { a: number; b: number }) => String(a + b),
})

export default defineAgentModule({ id: 'adder', instructions: 'You add numbers with the add tool.', tools: [add] })
`

export const TINY_AGENT_MJS = `import { createAgent, OpenAIProvider, policyReviewer, tool } from '@signalbox/core'
import { createInProcessBus } from '@signalbox/core/bus'
import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { z } from 'zod'

const bus = createInProcessBus()
const reviews = serveReviewer({ bus, reviewer: policyReviewer(() => true, { name: 'policy' }) })
await reviews.ready
const refund = tool({
  name: 'refund',
  description: 'Refunds an order.',
  schema: z.object({ order: z.string() }),
  needsApproval: true,
  execute: ({ order }) => 'refunded ' + order,
})
const agent = createAgent({
  id: 'shop',
  provider: new OpenAIProvider({ baseURL: process.env.MODEL_URL, model: 'tiny' }),
  tools: [refund],
  reviewer: remoteReviewer({ bus }),
})
const events = []
agent.on('tool.end', (event) => events.push(event.toolName + ':' + event.outcome))
const result = await agent.run('Refund order 42, please.')
reviews.close()
await bus.close()
console.log(JSON.stringify({ status: result.status, output: result.output, events }))
`

/** Every entry point of every package, so tsc reads (and checks) every declaration file they ship. */
export const ENTRY_POINTS_TS = `import type * as core from '@signalbox/core'
import type * as coreBus from '@signalbox/core/bus'
import type * as coreInternal from '@signalbox/core/internal'
import type * as coreProtocol from '@signalbox/core/protocol'
import type * as coreStore from '@signalbox/core/store'
import type * as coreTesting from '@signalbox/core/testing'
import type * as coreConformance from '@signalbox/core/testing/conformance'
import type * as actors from '@signalbox/actors'
import type * as actorsInspect from '@signalbox/actors/inspect'
import type * as actorsInternal from '@signalbox/actors/internal'
import type * as actorsNats from '@signalbox/actors/nats'
import type * as actorsStore from '@signalbox/actors/store'
import type * as actorsSystem from '@signalbox/actors/system'
import type * as actorsTrust from '@signalbox/actors/trust'
import type * as aiSdk from '@signalbox/ai-sdk'
import type * as cli from '@signalbox/cli'
import type * as cliInternal from '@signalbox/cli/internal'
import type * as consoleUi from '@signalbox/console'
import type * as consoleInternal from '@signalbox/console/internal'
import type * as mcp from '@signalbox/mcp'
import type * as otel from '@signalbox/otel'

export type Everything = [typeof core, typeof coreBus, typeof coreInternal, typeof coreProtocol, typeof coreStore,
  typeof coreTesting, typeof coreConformance, typeof actors, typeof actorsInspect, typeof actorsInternal, typeof actorsNats, typeof actorsStore,
  typeof actorsSystem, typeof actorsTrust, typeof aiSdk, typeof cli, typeof cliInternal, typeof consoleUi,
  typeof consoleInternal, typeof mcp, typeof otel]
`

/**
 * Structured output, a tool and a reviewer over the bus, written as a user of `zod` writes them:
 * zod 4 from 'zod'; on zod 3.25 the zod 4 API from 'zod/v4', and a zod 3 schema from 'zod'.
 * The annotations are checked by tsc; the run prints what happened.
 */
export function zodConsumerTs(line: ZodLine): string {
  const [zod4, zod3] = line === 'zod 4' ? ['zod', 'zod/v3'] : ['zod/v4', 'zod']
  return `import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { createAgent, OpenAIProvider, policyReviewer, tool } from '@signalbox/core'
import { createInProcessBus } from '@signalbox/core/bus'
import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { AiSdkProvider } from '@signalbox/ai-sdk'
import { z } from '${zod4}'
import { z as z3 } from '${zod3}'

const bus = createInProcessBus()
const reviews = serveReviewer({
  bus,
  reviewer: policyReviewer(({ arguments: args }) => (args as { amount: number }).amount <= 100, { name: 'policy' }),
})
await reviews.ready
const refund = tool({
  name: 'refund',
  description: 'Refunds part of an order.',
  schema: z.object({ order: z.string().min(1), amount: z.number().positive() }),
  needsApproval: ({ amount }) => amount > 10,
  execute: ({ order, amount }) => {
    const text: string = 'refunded ' + amount.toFixed(2) + ' on ' + order.toUpperCase()
    return text
  },
})
const lookup = tool({
  name: 'lookup',
  description: 'Finds an order.',
  schema: z3.object({ order: z3.string(), withItems: z3.boolean().default(false) }),
  execute: ({ order, withItems }) => {
    const found: { order: string; items: boolean } = { order, items: withItems }
    return found
  },
})
const agent = createAgent({
  id: 'shop',
  provider: new OpenAIProvider({ baseURL: process.env.MODEL_URL, model: process.env.MODEL }),
  tools: [lookup, refund],
  reviewer: remoteReviewer({ bus }),
  output: z.object({ order: z.string(), refunded: z.number(), status: z.enum(['done', 'refused']) }),
})
const events: string[] = []
agent.on('tool.end', (event) => events.push(event.toolName + ':' + event.outcome))
agent.on('approval.decided', (event) => events.push('decided:' + event.decision.approved + ':' + event.decision.reviewer))
const result = await agent.run('Refund 42 on order a-7, please.')
const receipt: { order: string; refunded: number; status: 'done' | 'refused' } = result.output
reviews.close()
await bus.close()

// The same tool and a structured answer, on an AI SDK provider package.
const compatible = createOpenAICompatible({
  name: 'shop',
  baseURL: process.env.MODEL_URL ?? '',
  includeUsage: true,
  supportsStructuredOutputs: true,
})
const viaAiSdk = createAgent({
  id: 'shop-ai-sdk',
  provider: new AiSdkProvider(compatible.chatModel(process.env.MODEL + '-ai-sdk')),
  tools: [lookup],
  output: z.object({ order: z.string(), found: z.boolean() }),
})
const second = await viaAiSdk.run('Is order a-7 there?')
const found: { order: string; found: boolean } = second.output
console.log(JSON.stringify({ status: result.status, receipt, events, aiSdk: { found, tokens: second.usage.totalTokens } }))
`
}
