import { createAgent, ScriptedReviewer } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { McpConnectError, mcpTools } from '../src/index.ts'
import { eventsOf, everythingOverHttp, recordEvents, scriptedModel, toolResult, track } from './support.ts'

const sumCall = (id: string, a: unknown = 2) => ({ id, name: 'get-sum', arguments: { a, b: 3 } })
const echoCall = (id: string, message: string) => ({ id, name: 'echo', arguments: { message } })

describe('mcpTools({ url }) over Streamable HTTP (server-everything)', () => {
  it('lists the tools and an agent calls one over a real model round trip', async () => {
    const server = await everythingOverHttp()
    const toolset = track(mcpTools({ url: server.url }))
    const tools = await toolset.tools()
    expect(toolset.name).toBe(new URL(server.url).host)
    expect(toolset.pid).toBeUndefined()
    expect(tools.find((t) => t.name === 'get-sum')?.parameters).toMatchObject({
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    })
    const { provider } = await scriptedModel({ '*': [{ toolCalls: [sumCall('c1')] }, { content: 'five' }] })
    const result = await createAgent({ provider, tools }).run('2 + 3?')
    expect(result.output).toBe('five')
    expect(toolResult(result.messages, 'c1')).toBe('The sum of 2 and 3 is 5.')
  })

  it('an approval-gated call: denied is never sent, approved runs', async () => {
    const server = await everythingOverHttp()
    const toolset = track(mcpTools({ url: server.url, needsApproval: { echo: true } }))
    const { provider } = await scriptedModel({
      '*': [{ toolCalls: [echoCall('c1', 'first')] }, { toolCalls: [echoCall('c2', 'second')] }, { content: 'done' }],
    })
    const reviewer = new ScriptedReviewer([false, true])
    const agent = createAgent({ provider, reviewer, tools: await toolset.tools() })
    const events = recordEvents(agent)
    const result = await agent.run('echo twice')
    expect(eventsOf(events, 'tool.end').map((e) => e.outcome)).toEqual(['approval_denied', 'executed'])
    expect(toolResult(result.messages, 'c1')).not.toContain('Echo: first')
    expect(toolResult(result.messages, 'c2')).toBe('Echo: second')
  })

  it('arguments that fail the schema are rejected before the call', async () => {
    const server = await everythingOverHttp()
    const toolset = track(mcpTools({ url: server.url }))
    const { provider } = await scriptedModel({ '*': [{ toolCalls: [sumCall('c1', 'two')] }, { content: 'done' }] })
    const agent = createAgent({ provider, tools: await toolset.tools() })
    const events = recordEvents(agent)
    const result = await agent.run('sum')
    expect(eventsOf(events, 'tool.end').map((e) => e.outcome)).toEqual(['invalid_arguments'])
    expect(toolResult(result.messages, 'c1')).toContain('a: must be number')
  })

  it('the server killed mid-call: the model reads an error at once; after it is back, the next call reconnects', async () => {
    const server = await everythingOverHttp()
    const toolset = track(mcpTools({ url: server.url, restartBackoff: { initialDelayMs: 50 } }))
    const longCall = { id: 'c1', name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } }
    const { provider } = await scriptedModel({
      '*': async (_request, index) => {
        if (index === 0) return { toolCalls: [longCall] }
        if (index > 1) return { content: 'done' }
        // The server comes back on the same port (a new process: the old session is gone).
        await server.start()
        return { toolCalls: [sumCall('c2')] }
      },
    })
    const agent = createAgent({ provider, tools: await toolset.tools() })
    const events = recordEvents(agent)
    agent.on('tool.start', (event) => {
      if (event.toolName === longCall.name) setTimeout(() => void server.kill(), 300)
    })
    const result = await agent.run('long, then sum')
    expect(toolResult(result.messages, 'c1')).toMatch(/stopped during "trigger-long-running-operation"/)
    expect(toolResult(result.messages, 'c2')).toBe('The sum of 2 and 3 is 5.')
    expect(eventsOf(events, 'tool.end').map((e) => e.outcome)).toEqual(['failed', 'executed'])
  })

  it('the server restarted between calls: the next call opens a new session, without an error', async () => {
    const server = await everythingOverHttp()
    const toolset = track(mcpTools({ url: server.url }))
    const { provider } = await scriptedModel({
      '*': async (_request, index) => {
        if (index === 0) return { toolCalls: [sumCall('c1')] }
        if (index > 1) return { content: 'done' }
        await server.kill()
        await server.start()
        return { toolCalls: [sumCall('c2', 4)] }
      },
    })
    const agent = createAgent({ provider, tools: await toolset.tools() })
    const events = recordEvents(agent)
    const result = await agent.run('sum twice')
    expect(toolResult(result.messages, 'c1')).toBe('The sum of 2 and 3 is 5.')
    expect(toolResult(result.messages, 'c2')).toBe('The sum of 4 and 3 is 7.')
    expect(eventsOf(events, 'tool.end').map((e) => e.outcome)).toEqual(['executed', 'executed'])
  })

  it('no server at the URL: connect() fails with a clear error', async () => {
    const server = await everythingOverHttp()
    await server.kill()
    const toolset = track(mcpTools({ url: server.url, name: 'gone' }))
    const error = await toolset.connect().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(McpConnectError)
    expect(String(error)).toMatch(/Could not connect to the MCP server "gone"/)
  })
})
