/**
 * A server's resources and prompts, against our own MCP server over stdio and Streamable HTTP:
 * read by the application, or (resources: true) by the model through two read-only tools.
 */
import { createAgent } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { ourServer, TRANSPORTS, type Transport } from '../../../test/support/mcp/our-server.ts'
import { mcpTools } from '../src/index.ts'
import { scriptedModel, toolResult, track } from './support.ts'

describe.each(TRANSPORTS)('resources and prompts over %s', (transport: Transport) => {
  it('the application lists and reads resources, lists prompts and starts a run from one', async () => {
    const toolset = track(mcpTools({ ...(await ourServer(transport)).server, name: 'ours' }))
    expect(await toolset.listResources()).toEqual([
      { uri: 'memo://today', name: 'today', description: "Today's memo", mimeType: 'text/plain' },
      { uri: 'memo://menu', name: 'menu', description: 'The menu', mimeType: 'text/plain' },
    ])
    expect(await toolset.readResource('memo://menu')).toBe('Soup of the day: leek.')
    await expect(toolset.readResource('memo://nothing')).rejects.toThrow(/Resource not found/)
    expect(await toolset.listPrompts()).toEqual([
      {
        name: 'summarize',
        description: 'Summarize a topic.',
        arguments: [{ name: 'topic', description: 'What to summarize', required: true }],
      },
    ])
    const prompt = await toolset.prompt('summarize', { topic: 'the Basel trains' })
    expect(prompt).toEqual({
      description: 'Summarize the Basel trains',
      messages: [{ role: 'user', content: 'Summarize what we know about the Basel trains, in two sentences.' }],
    })
    const { server, provider } = await scriptedModel({ '*': [{ content: 'Two sentences.' }] })
    await createAgent({ provider }).run(prompt.messages)
    expect(server.requests[0]?.messages.at(-1)).toEqual(prompt.messages[0])
    // By default the model gets the tools only.
    expect((await toolset.tools()).map((t) => t.name)).not.toContain('list_resources')
  })

  it('resources: true gives the model list_resources and read_resource, read-only (no approval)', async () => {
    const toolset = track(mcpTools({ ...(await ourServer(transport)).server, name: 'ours', prefix: 'memo_', resources: true }))
    const tools = await toolset.tools()
    const list = tools.find((t) => t.name === 'memo_list_resources')
    const read = tools.find((t) => t.name === 'memo_read_resource')
    expect(list?.needsApproval).toBeUndefined()
    expect(read?.needsApproval).toBeUndefined()
    const { provider } = await scriptedModel({
      '*': [
        { toolCalls: [{ id: 'l1', name: 'memo_list_resources', arguments: {} }] },
        { toolCalls: [{ id: 'r1', name: 'memo_read_resource', arguments: { uri: 'memo://today' } }] },
        { toolCalls: [{ id: 'r2', name: 'memo_read_resource', arguments: { path: 'memo://today' } }] },
        { content: 'Stand-up at 9:30.' },
      ],
    })
    const result = await createAgent({ provider, tools }).run('what is on today?')
    expect(toolResult(result.messages, 'l1')).toBe(
      "memo://today — today: Today's memo (text/plain)\nmemo://menu — menu: The menu (text/plain)",
    )
    expect(toolResult(result.messages, 'r1')).toBe('Stand-up at 9:30.')
    expect(toolResult(result.messages, 'r2')).toMatch(/uri/)
  })
})
