/**
 * What the tool hosts on the bus serve: `discoverTools()` without names gathers every host's
 * `tool.catalog` (protocol §8.7), on the in-process bus and on NATS.
 */
import { discoverTools, serveTools } from '@signalbox/actors'
import { createAgent, type Tool, tool } from '@signalbox/core'
import { decodeMessage, encodeMessage, PROTOCOL_VERSION, ToolCatalogMessage } from '@signalbox/core/protocol'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type Deployment, deploy, readByModel, TRANSPORTS } from './harness.ts'

const named = (name: string, needsApproval = false) =>
  tool({
    name,
    description: `The ${name} tool.`,
    schema: z.object({ n: z.number() }),
    ...(needsApproval ? { needsApproval: true } : {}),
    timeoutMs: 7_000,
    execute: ({ n }) => `${name}(${n})`,
  })

async function host(d: Deployment, name: string, tools: Tool<any>[]) {
  const served = serveTools({ bus: await d.bus(name), subjects: d.subjects, tools, hostId: name })
  d.defer(() => served.close())
  await served.ready
}

for (const transport of TRANSPORTS) {
  describe(`discoverTools() without names (${transport.name})`, () => {
    it('lists every tool of every host once, with its description and approval; the agent calls them', async () => {
      const d = await deploy(transport)
      await host(d, 'kitchen', [named('boil'), named('chop')])
      await host(d, 'cellar', [named('pour', true), named('chop')])
      const bus = await d.bus('agent')
      const tools = await discoverTools({ bus, subjects: d.subjects })
      expect(tools.map((t) => [t.name, t.description, t.needsApproval === true])).toEqual([
        ['boil', 'The boil tool.', false],
        ['chop', 'The chop tool.', false],
        ['pour', 'The pour tool.', true],
      ])
      const provider = new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'c1', name: 'boil', arguments: { n: 3 } }] }, { content: 'done' }],
      })
      await createAgent({ provider, tools }).run('boil 3')
      expect(readByModel(provider, 'c1')).toBe('boil(3)')
    })

    it('each host answers tool.list with its own tool.catalog; no host is an empty list', async () => {
      const d = await deploy(transport)
      const bus = await d.bus('asker')
      expect(await discoverTools({ bus, subjects: d.subjects })).toEqual([])
      await host(d, 'kitchen', [named('boil')])
      const replies = await bus.requestMany(d.subjects.toolCatalog(), encodeMessage({ v: PROTOCOL_VERSION, type: 'tool.list' }), {
        timeoutMs: 3_000,
      })
      expect(replies).toHaveLength(1)
      const decoded = decodeMessage((replies[0] as { data: Uint8Array }).data, ToolCatalogMessage)
      expect(decoded.ok && decoded.value).toMatchObject({
        type: 'tool.catalog',
        hostId: 'kitchen',
        tools: [{ name: 'boil', description: 'The boil tool.', parameters: { type: 'object' }, timeoutMs: 7_000 }],
      })
    })
  })
}
