/**
 * An MCP server's question to the user, answered by a person on the bus: our own MCP server
 * (a real process, Streamable HTTP) asks during a tool call; the question goes out on the real
 * NATS server as any `ask_human` question does, an answer service on its own connection answers
 * it, and the server gets the fields.
 */
import { remoteAnswerer, serveAnswerer } from '@signalbox/actors'
import { connectNatsBus } from '@signalbox/actors/nats'
import { createAgent, functionAnswerer, MemoryAuditLog, type Question } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { mcpTools } from '@signalbox/mcp'
import { afterEach, describe, expect, it } from 'vitest'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { ourServer } from '../support/mcp/our-server.ts'
import { scriptedModel } from './support/scripted.ts'

const closers: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

describe('MCP elicitation routed to a person over NATS', () => {
  it('the server’s question is a question on the bus; the answer service’s answer goes back to the server', async () => {
    const prefix = uniquePrefix()
    const agentBus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'elicit-agent' })
    const personBus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'elicit-person' })
    closers.push(
      () => agentBus.close(),
      () => personBus.close(),
    )
    const seen: Question[] = []
    const subjects = createSubjects(prefix)
    const service = serveAnswerer({
      bus: personBus,
      subjects,
      answerer: functionAnswerer(
        (question) => {
          seen.push(question)
          return JSON.stringify({ name: 'Bob', guests: 2 })
        },
        { name: 'bob' },
      ),
    })
    closers.push(() => service.close())
    await service.ready

    const { server } = await ourServer('http')
    const answerer = remoteAnswerer({ bus: agentBus, subjects })
    closers.push(() => answerer.close())
    const toolset = mcpTools({ ...server, name: 'bistro', elicitation: { answerer, timeoutMs: 20_000 } })
    closers.push(() => toolset.close())
    const { provider } = await scriptedModel({
      '*': [{ toolCalls: [{ id: 'c1', name: 'book_table', arguments: { day: 'saturday' } }] }, { content: 'booked' }],
    })
    const audit = new MemoryAuditLog()
    const agent = createAgent({ id: 'concierge', provider: provider('m'), tools: await toolset.tools(), audit })
    const result = await agent.run('book a table on saturday')

    const read = result.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'c1')
    expect(read?.content).toBe('booked for Bob, 2 guests on saturday')
    // What went over the bus: a question of the agent's, for the call, with the server's schema.
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject({ agentId: 'concierge', callId: 'c1', answerSchema: { type: 'object' } })
    expect(seen[0]?.question).toContain('The MCP server "bistro" asks: Booking a table for saturday')
    expect(audit.entries.map((e) => [e.kind, e.toolName, e.actor])).toEqual([['question.answered', 'book_table', 'bob']])
  })
})
