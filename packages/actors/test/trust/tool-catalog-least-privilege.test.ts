/**
 * `discoverTools()` without names under the generated permissions: a private nats-server whose
 * authorization block is the generator's, an agent user and a tool-host user. The agent lists and
 * calls the host's tools; the server logs no permission violation.
 */
import { createAgent, tool } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod/v4'
import { type ConfigServer, startConfigServer } from '../../../../test/support/nats-config-server.ts'
import { discoverTools, serveTools } from '../../src/index.ts'
import { connectNatsBus, type NatsBus } from '../../src/nats/index.ts'
import { authorizationBlock, type Role, rolePermissions } from '../../src/trust/index.ts'
import { readByModel } from '../actors/harness.ts'

const prefix = 'cat.v1'
const subjects = createSubjects(prefix)
const users = {
  shopper: { role: 'agent' as Role, permissions: rolePermissions('agent', { prefix, agent: 'shopper' }) },
  toolhost: { role: 'tool-host' as Role, permissions: rolePermissions('tool-host', { prefix }) },
}
let server: ConfigServer
const buses: NatsBus[] = []

async function busOf(user: keyof typeof users): Promise<NatsBus> {
  const { role, permissions } = users[user]
  const bus = await connectNatsBus({
    servers: server.url,
    prefix,
    user,
    pass: `pw-${user}`,
    inboxPrefix: permissions.inboxPrefix,
    consumerPrefix: permissions.name,
    durable: role === 'agent' ? {} : { access: 'check' },
    name: user,
  })
  buses.push(bus)
  return bus
}

beforeAll(async () => {
  server = await startConfigServer(() =>
    authorizationBlock(
      Object.entries(users).map(([user, { permissions }]) => ({ login: { user, password: `pw-${user}` }, permissions })),
    ),
  )
})

afterAll(async () => {
  for (const bus of buses.reverse()) await bus.close()
  await server?.dispose()
})

describe('the tool list under least privilege', () => {
  it('an agent user lists what a tool-host user serves and calls it, with no violation', async () => {
    const agentBus = await busOf('shopper') // the agent role creates the stream
    const stock = tool({
      name: 'stock',
      description: 'How many are left.',
      schema: z.object({ sku: z.string() }),
      execute: ({ sku }) => `${sku}: 4 left`,
    })
    const host = serveTools({ bus: await busOf('toolhost'), subjects, tools: [stock], hostId: 'toolhost' })
    await host.ready
    const tools = await discoverTools({ bus: agentBus, subjects })
    expect(tools.map((t) => t.name)).toEqual(['stock'])
    const provider = new ScriptedProvider({
      script: [{ toolCalls: [{ id: 'c1', name: 'stock', arguments: { sku: 'bear' } }] }, { content: 'done' }],
    })
    await createAgent({ id: 'shopper', provider, tools }).run('how many bears?')
    expect(readByModel(provider, 'c1')).toBe('bear: 4 left')
    host.close()
    expect(server.violations()).toEqual([])
  })
})
