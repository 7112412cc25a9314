/**
 * What an agent gets of a server's tools, against our own MCP server over stdio and Streamable
 * HTTP: filters, the approval the annotations ask for, and a tool list that changes.
 */
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { ConfigError, createAgent, ScriptedReviewer } from '@signalbox/core'
import { beforeEach, describe, expect, it } from 'vitest'
import { type OurServer, ourServer, TRANSPORTS, type Transport } from '../../../test/support/mcp/our-server.ts'
import { type McpToolsOptions, mcpTools } from '../src/index.ts'
import { eventsOf, recordEvents, scriptedModel, tempDir, toolResult, track } from './support.ts'

describe.each(TRANSPORTS)('our MCP server over %s', (transport: Transport) => {
  /** A toolset on a server of its own (`effects`), or on the test's one (HTTP: one process, a session each). */
  let shared: Promise<OurServer> | undefined
  beforeEach(() => {
    shared = undefined
  })
  const toolset = async (options: Omit<McpToolsOptions, 'command' | 'url'> = {}, effects?: string) => {
    if (!effects) shared ??= ourServer(transport)
    const server = effects ? ourServer(transport, { effects }) : (shared as Promise<OurServer>)
    return track(mcpTools({ ...(await server).server, name: 'ours', ...options }))
  }

  it('filter: allow keeps only the named tools, deny drops the named ones; a name the server lacks is a ConfigError', async () => {
    const allowed = await (await toolset({ filter: { allow: ['lookup', 'add'] } })).tools()
    expect(allowed.map((t) => t.name)).toEqual(['lookup', 'add'])
    const denied = await (await toolset({ filter: { deny: ['delete_record', 'install_tool'] }, prefix: 'o_' })).tools()
    expect(denied.map((t) => t.name)).not.toContain('o_delete_record')
    expect(denied.map((t) => t.name)).toContain('o_lookup')
    const predicate = await (await toolset({ filter: (tool) => tool.annotations?.readOnlyHint === true })).tools()
    expect(predicate.map((t) => t.name)).toEqual(['lookup', 'show_meta', 'out_of_stock', 'crash'])
    const typo = await toolset({ filter: { allow: ['lookup', 'lokup'] } })
    const error = await typo.tools().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect(String(error)).toMatch(/filter\.allow names "lokup", which the MCP server "ours" does not have/)
  })

  it('annotations set the approval default: destructive asks, read-only does not; needsApproval and annotations: false override', async () => {
    const gated = async (options: Omit<McpToolsOptions, 'command' | 'url'> = {}) =>
      Object.fromEntries((await (await toolset(options)).tools()).map((t) => [t.name, t.needsApproval === true]))
    expect(await gated()).toMatchObject({
      lookup: false, // readOnlyHint: true
      delete_record: true, // destructiveHint: true
      archive_record: true, // readOnlyHint: false, no destructiveHint: destructive by the spec's default
      install_tool: false, // destructiveHint: false
      add: false, // no annotations
    })
    expect(await gated({ needsApproval: { delete_record: false, add: true } })).toMatchObject({
      delete_record: false,
      add: true,
      archive_record: true,
    })
    expect(Object.values(await gated({ annotations: false })).some(Boolean)).toBe(false)
    expect(Object.values(await gated({ needsApproval: false })).some(Boolean)).toBe(false)
  })

  it('the destructive tool waits for a reviewer: denied never reaches the server, approved does', async () => {
    const dir = await tempDir()
    const effects = path.join(dir, 'effects.txt')
    const tools = await (await toolset({}, effects)).tools()
    const del = (id: string, callId: string) => ({ id: callId, name: 'delete_record', arguments: { id } })
    const { provider } = await scriptedModel({
      '*': [{ toolCalls: [del('r1', 'c1')] }, { toolCalls: [del('r2', 'c2')] }, { content: 'done' }],
    })
    const agent = createAgent({ provider, tools, reviewer: new ScriptedReviewer([false, true]) })
    const events = recordEvents(agent)
    await agent.run('delete r1 and r2')
    expect(eventsOf(events, 'tool.end').map((e) => e.outcome)).toEqual(['approval_denied', 'executed'])
    expect(await readFile(effects, 'utf8')).toBe('deleted r2\n')
  })

  it('notifications/tools/list_changed: the list is fetched again and keepUpdated gives the agent the new tools', async () => {
    const set = await toolset()
    const mine = await set.tools()
    expect(mine.map((t) => t.name)).not.toContain('late_tool')
    const changed = new Promise<string[]>((resolve) => set.onToolsChanged((tools) => resolve(tools.map((t) => t.name))))
    const { server, provider } = await scriptedModel({
      '*': async (_request, index) => {
        if (index === 0) return { toolCalls: [{ id: 'c1', name: 'install_tool', arguments: {} }] }
        if (index === 1) {
          // The server's notice and the refetch happen on their own: wait for them, not for a time.
          await changed
          return { toolCalls: [{ id: 'c2', name: 'late_tool', arguments: {} }] }
        }
        return { content: 'done' }
      },
    })
    const agent = createAgent({ provider, tools: mine })
    set.keepUpdated(agent)
    const result = await agent.run('install, then use the new tool')
    expect(await changed).toContain('late_tool')
    expect(toolResult(result.messages, 'c1')).toBe('installed late_tool, removed add')
    expect(toolResult(result.messages, 'c2')).toBe('late tool ran')
    // What the model was offered after the change: late_tool in, add (removed by the server) out.
    const offered = server.requests.at(-1)?.tools.map((t) => t.name) ?? []
    expect(offered).toContain('late_tool')
    expect(offered).not.toContain('add')
    expect(agent.toolNames).toContain('late_tool')
    expect(await set.tools()).toHaveLength(offered.length)
  })
})
