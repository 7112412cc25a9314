/**
 * A server's `elicitation/create` routed to a person, against our own MCP server over stdio and
 * Streamable HTTP: the ask_human machinery (question, deadline, events, audit), the answer checked
 * against the server's schema.
 */
import { type Answerer, type AuditEntry, createAgent, MemoryAuditLog, ScriptedAnswerer } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { ourServer, TRANSPORTS, type Transport } from '../../../test/support/mcp/our-server.ts'
import { type McpElicitationOptions, mcpTools } from '../src/index.ts'
import { eventsOf, recordEvents, scriptedModel, toolResult, track } from './support.ts'

const book = { id: 'c1', name: 'book_table', arguments: { day: 'friday' } }

async function booking(transport: Transport, elicitation: McpElicitationOptions | undefined) {
  const { server } = await ourServer(transport)
  const toolset = track(mcpTools({ ...server, name: 'ours', ...(elicitation ? { elicitation } : {}) }))
  const { provider } = await scriptedModel({ '*': [{ toolCalls: [book] }, { content: 'done' }] })
  const audit = new MemoryAuditLog()
  const agent = createAgent({ provider, tools: await toolset.tools(), audit })
  const events = recordEvents(agent)
  const result = await agent.run('book a table on friday')
  return { read: toolResult(result.messages, 'c1'), events, audit: audit.entries as AuditEntry[] }
}

describe.each(TRANSPORTS)('elicitation over %s', (transport: Transport) => {
  it('becomes a question to a person; an answer that breaks the schema is refused and asked again; the valid one goes back to the server', async () => {
    const answerer = new ScriptedAnswerer(['{"name": "Tina", "guests": 40}', '{"name": "Tina", "guests": 4, "terrace": true}'], {
      name: 'tina',
    })
    const { read, events, audit } = await booking(transport, { answerer })
    expect(read).toBe('booked for Tina, 4 guests, terrace on friday')
    const [first, second] = answerer.questions
    expect(answerer.questions).toHaveLength(2)
    expect(first?.question).toContain(
      'The MCP server "ours" asks: Booking a table for friday: under which name, and for how many guests?',
    )
    expect(first?.question).toContain('- guests (Guests): a whole number (≥ 1, ≤ 12), required')
    expect(first?.question).toContain('Or answer "decline" to refuse.')
    expect(first?.answerSchema).toMatchObject({ type: 'object', required: ['name', 'guests'] })
    expect(first?.callId).toBe('c1')
    expect(second?.question).toContain('was not accepted: guests: must be <= 12')
    expect(second?.deadline).toBe(first?.deadline)
    expect(second?.questionId).not.toBe(first?.questionId)
    // Audited like ask_human: the refused answer, then the one that counted.
    expect(audit.map((e) => [e.kind, e.toolName, e.actor, e.decision])).toEqual([
      ['question.rejected', 'book_table', 'tina', '{"name": "Tina", "guests": 40}'],
      ['question.answered', 'book_table', 'tina', '{"name": "Tina", "guests": 4, "terrace": true}'],
    ])
    expect(eventsOf(events, 'question.asked')).toHaveLength(2)
    expect(eventsOf(events, 'question.answered').map((e) => e.answeredBy)).toEqual(['tina'])
    expect(eventsOf(events, 'tool.end').map((e) => e.outcome)).toEqual(['executed'])
  })

  it('"decline" declines; no answer by the deadline cancels, as a question.timeout', async () => {
    const declined = await booking(transport, { answerer: new ScriptedAnswerer(['decline']) })
    expect(declined.read).toBe('not booked (decline)')
    const silent: Answerer = {
      answer: (_question, { signal }) =>
        new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
    }
    const timedOut = await booking(transport, { answerer: silent, timeoutMs: 300 })
    expect(timedOut.read).toBe('not booked (cancel)')
    expect(eventsOf(timedOut.events, 'question.timeout')).toHaveLength(1)
    expect(timedOut.audit.map((e) => [e.kind, e.actor])).toEqual([['question.timeout', 'system']])
  })

  it('without elicitation configured the client does not offer it: the server cannot ask', async () => {
    const { read } = await booking(transport, undefined)
    expect(read).toMatch(/Method not found/)
  })
})
