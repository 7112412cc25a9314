import { existsSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { ConfigError, createAgent, deny, ScriptedReviewer } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { type McpToolsOptions, mcpTools } from '../src/index.ts'
import {
  EVERYTHING_SERVER,
  eventsOf,
  FILESYSTEM_SERVER,
  isAlive,
  processGone,
  recordEvents,
  scriptedModel,
  tempDir,
  toolResult,
  track,
} from './support.ts'

/** server-filesystem confined to a fresh temp dir: real side effects to check. */
async function filesystem(options: Pick<McpToolsOptions, 'prefix' | 'needsApproval' | 'annotations'> = {}) {
  const dir = await tempDir()
  const toolset = track(
    mcpTools({ command: process.execPath, args: [FILESYSTEM_SERVER, dir], stderr: 'ignore', name: 'files', ...options }),
  )
  return { dir, toolset }
}

describe('mcpTools({ command }) over stdio', () => {
  it('starts the server on first use, lists its tools with their JSON Schemas, and stops it on close()', async () => {
    const { toolset } = await filesystem({ prefix: 'fs_' })
    expect(toolset.pid).toBeUndefined()
    const tools = await toolset.tools()
    const pid = toolset.pid as number
    expect(isAlive(pid)).toBe(true)
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['fs_write_file', 'fs_read_text_file', 'fs_list_directory']))
    const write = tools.find((t) => t.name === 'fs_write_file')
    expect(write?.parameters).toEqual({
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
    })
    expect(await toolset.tools()).toBe(tools)
    await toolset.close()
    await processGone(pid)
    expect(toolset.pid).toBeUndefined()
  })

  it('an agent calls the server over a real model round trip; the model reads the results', async () => {
    // No reviewer here: without `annotations: false` the destructive write_file would wait for one.
    const { dir, toolset } = await filesystem({ annotations: false })
    const file = path.join(dir, 'note.txt')
    const { server, provider } = await scriptedModel({
      '*': [
        { toolCalls: [{ id: 'w1', name: 'write_file', arguments: { path: file, content: 'platform 9' } }] },
        { toolCalls: [{ id: 'r1', name: 'read_text_file', arguments: { path: file } }] },
        { content: 'done' },
      ],
    })
    const agent = createAgent({ provider, tools: await toolset.tools() })
    const result = await agent.run('write and read a note')
    expect(result.status).toBe('done')
    expect(await readFile(file, 'utf8')).toBe('platform 9')
    expect(toolResult(result.messages, 'w1')).toContain('Successfully wrote')
    expect(toolResult(result.messages, 'r1')).toBe('platform 9')
    // The model was sent the server's schema.
    expect(server.requests[0]?.tools.find((t) => t.name === 'write_file')?.parameters).toMatchObject({
      required: ['path', 'content'],
    })
    server.assertDone()
  })

  it("a tool that reports an error (isError) is an error result with the server's text", async () => {
    const { toolset } = await filesystem()
    const { provider } = await scriptedModel({
      '*': [{ toolCalls: [{ id: 'c1', name: 'read_text_file', arguments: { path: '/etc/hostname' } }] }, { content: 'done' }],
    })
    const agent = createAgent({ provider, tools: await toolset.tools() })
    const events = recordEvents(agent)
    const result = await agent.run('read outside')
    expect(toolResult(result.messages, 'c1')).toMatch(/Access denied - path outside allowed directories/)
    expect(eventsOf(events, 'tool.end')[0]).toMatchObject({ outcome: 'failed', isError: true })
  })

  it('an approval-gated tool (per-tool map): denied does not reach the server, approved does', async () => {
    const { dir, toolset } = await filesystem({ needsApproval: { write_file: true } })
    const denied = path.join(dir, 'denied.txt')
    const approved = path.join(dir, 'approved.txt')
    const { provider } = await scriptedModel({
      '*': [
        { toolCalls: [{ id: 'c1', name: 'write_file', arguments: { path: denied, content: 'no' } }] },
        { toolCalls: [{ id: 'c2', name: 'write_file', arguments: { path: approved, content: 'yes' } }] },
        { toolCalls: [{ id: 'c3', name: 'list_directory', arguments: { path: dir } }] },
        { content: 'done' },
      ],
    })
    const reviewer = new ScriptedReviewer([{ approved: false, reason: 'not that file' }, true])
    const agent = createAgent({ provider, reviewer, tools: await toolset.tools() })
    const events = recordEvents(agent)
    const result = await agent.run('write two files')
    expect(existsSync(denied)).toBe(false)
    expect(await readFile(approved, 'utf8')).toBe('yes')
    // Only write_file is gated: list_directory ran without a review.
    expect(reviewer.requests.map((r) => [r.toolName, r.arguments])).toEqual([
      ['write_file', { path: denied, content: 'no' }],
      ['write_file', { path: approved, content: 'yes' }],
    ])
    expect(toolResult(result.messages, 'c1')).toContain('not that file')
    expect(toolResult(result.messages, 'c3')).toContain('approved.txt')
    expect(eventsOf(events, 'tool.end').map((e) => e.outcome)).toEqual(['approval_denied', 'executed', 'executed'])
  })

  it('a predicate decides from the call; a map naming a tool the server lacks is a ConfigError', async () => {
    const { dir, toolset } = await filesystem({
      needsApproval: ({ toolName, arguments: args }) => toolName === 'write_file' && String(args.path).endsWith('.sh'),
    })
    const { provider } = await scriptedModel({
      '*': [
        { toolCalls: [{ id: 'c1', name: 'write_file', arguments: { path: path.join(dir, 'a.sh'), content: 'x' } }] },
        { toolCalls: [{ id: 'c2', name: 'write_file', arguments: { path: path.join(dir, 'a.txt'), content: 'x' } }] },
        { content: 'done' },
      ],
    })
    const reviewer = new ScriptedReviewer([false])
    await createAgent({ provider, reviewer, tools: await toolset.tools() }).run('write')
    expect(reviewer.requests.map((r) => r.arguments)).toEqual([{ path: path.join(dir, 'a.sh'), content: 'x' }])
    expect(existsSync(path.join(dir, 'a.sh'))).toBe(false)
    expect(existsSync(path.join(dir, 'a.txt'))).toBe(true)

    const { toolset: typo } = await filesystem({ needsApproval: { write_fiel: true } })
    const error = await typo.tools().catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ConfigError)
    expect(String(error)).toMatch(/"write_fiel", which the MCP server "files" does not have/)
  })

  it('arguments that fail the JSON Schema are rejected before the call; the model reads each problem', async () => {
    const { dir, toolset } = await filesystem()
    const file = path.join(dir, 'bad.txt')
    const { provider } = await scriptedModel({
      '*': [
        { toolCalls: [{ id: 'c1', name: 'write_file', arguments: { path: file, content: 42, mode: 'x' } }] },
        { toolCalls: [{ id: 'c2', name: 'write_file', arguments: { content: 'text' } }] },
        { content: 'done' },
      ],
    })
    const agent = createAgent({ provider, tools: await toolset.tools() })
    const events = recordEvents(agent)
    const result = await agent.run('write')
    expect(existsSync(file)).toBe(false)
    expect(eventsOf(events, 'tool.end').map((e) => e.outcome)).toEqual(['invalid_arguments', 'invalid_arguments'])
    expect(toolResult(result.messages, 'c1')).toContain('invalid arguments for "write_file"')
    expect(toolResult(result.messages, 'c1')).toContain('content: must be string')
    expect(toolResult(result.messages, 'c2')).toMatch(/path: must have required property 'path'/)
  })

  it('hooks gate MCP tools like native ones', async () => {
    const { dir, toolset } = await filesystem()
    const file = path.join(dir, 'hooked.txt')
    const { provider } = await scriptedModel({
      '*': [{ toolCalls: [{ id: 'c1', name: 'write_file', arguments: { path: file, content: 'x' } }] }, { content: 'done' }],
    })
    const agent = createAgent({
      provider,
      tools: await toolset.tools(),
      hooks: { beforeToolExecution: ({ toolName }) => (toolName === 'write_file' ? deny('read-only today') : undefined) },
    })
    const result = await agent.run('write')
    expect(existsSync(file)).toBe(false)
    expect(toolResult(result.messages, 'c1')).toContain('read-only today')
  })

  it('one toolset is shared by two agents: one server process', async () => {
    const { dir, toolset } = await filesystem({ needsApproval: false })
    const { provider } = await scriptedModel({
      '*': (request) => {
        const last = request.messages.at(-1)
        if (last?.role === 'tool') return { content: 'done' }
        const name = String(last?.content)
        return { toolCalls: [{ name: 'write_file', arguments: { path: path.join(dir, name), content: name } }] }
      },
    })
    const tools = await toolset.tools()
    const pid = toolset.pid
    await Promise.all([
      createAgent({ id: 'a', provider, tools }).run('a.txt'),
      createAgent({ id: 'b', provider, tools }).run('b.txt'),
    ])
    expect(await readFile(path.join(dir, 'a.txt'), 'utf8')).toBe('a.txt')
    expect(await readFile(path.join(dir, 'b.txt'), 'utf8')).toBe('b.txt')
    expect(toolset.pid).toBe(pid)
  })
})

describe('a long call (server-everything over stdio)', () => {
  const everything = (options: { timeoutMs?: number } = {}) =>
    track(
      mcpTools({
        command: process.execPath,
        args: [EVERYTHING_SERVER, 'stdio'],
        stderr: 'ignore',
        restartBackoff: { initialDelayMs: 50 },
        ...options,
      }),
    )
  const longCall = { id: 'c1', name: 'trigger-long-running-operation', arguments: { duration: 30, steps: 30 } }
  const sumCall = { id: 'c2', name: 'get-sum', arguments: { a: 2, b: 3 } }

  it('the server killed mid-call: the model reads an error, and the next call restarts the server', async () => {
    const toolset = everything()
    const tools = await toolset.tools()
    const firstPid = toolset.pid as number
    const { provider } = await scriptedModel({ '*': [{ toolCalls: [longCall] }, { toolCalls: [sumCall] }, { content: 'done' }] })
    const agent = createAgent({ provider, tools })
    const events = recordEvents(agent)
    agent.on('tool.start', (event) => {
      // Once the request is surely on the server's stdin, kill the process hard.
      if (event.toolName === longCall.name) setTimeout(() => process.kill(firstPid, 'SIGKILL'), 300)
    })
    const result = await agent.run('long, then sum')
    expect(result.status).toBe('done')
    expect(toolResult(result.messages, 'c1')).toMatch(/MCP server .* stopped during "trigger-long-running-operation"/)
    expect(toolResult(result.messages, 'c2')).toBe('The sum of 2 and 3 is 5.')
    expect(eventsOf(events, 'tool.end').map((e) => [e.outcome, e.isError])).toEqual([
      ['failed', true],
      ['executed', false],
    ])
    expect(isAlive(firstPid)).toBe(false)
    expect(toolset.pid).not.toBe(firstPid)
    expect(isAlive(toolset.pid as number)).toBe(true)
  })

  it('a timeout gives the model a timeout error; the same server process keeps serving', async () => {
    const toolset = everything({ timeoutMs: 500 })
    const tools = await toolset.tools()
    const pid = toolset.pid
    const { provider } = await scriptedModel({ '*': [{ toolCalls: [longCall] }, { toolCalls: [sumCall] }, { content: 'done' }] })
    const agent = createAgent({ provider, tools })
    const events = recordEvents(agent)
    const result = await agent.run('long, then sum')
    expect(eventsOf(events, 'tool.end').map((e) => e.outcome)).toEqual(['timeout', 'executed'])
    expect(toolResult(result.messages, 'c1')).toMatch(/timed out after 500 ms/)
    expect(toolResult(result.messages, 'c2')).toBe('The sum of 2 and 3 is 5.')
    expect(toolset.pid).toBe(pid)
  })

  it('cancelling the run aborts the call; the server is not restarted', async () => {
    const toolset = everything()
    const tools = await toolset.tools()
    const pid = toolset.pid
    const { provider } = await scriptedModel({ '*': [{ toolCalls: [longCall] }] })
    const agent = createAgent({ provider, tools })
    const handle = agent.start('long')
    agent.on('tool.start', () => setTimeout(() => handle.cancel('changed my mind'), 100))
    const error = await handle.result.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(String(error)).toMatch(/changed my mind/)
    const { provider: next } = await scriptedModel({ '*': [{ toolCalls: [sumCall] }, { content: 'done' }] })
    const after = await createAgent({ provider: next, tools }).run('sum')
    expect(toolResult(after.messages, 'c2')).toBe('The sum of 2 and 3 is 5.')
    expect(toolset.pid).toBe(pid)
  })

  it('close() during a call: the model reads that the server was closed, then every later call too', async () => {
    const toolset = everything()
    const tools = await toolset.tools()
    const pid = toolset.pid as number
    const { provider } = await scriptedModel({ '*': [{ toolCalls: [longCall] }, { toolCalls: [sumCall] }, { content: 'done' }] })
    const agent = createAgent({ provider, tools })
    agent.on('tool.start', (event) => {
      if (event.toolName === longCall.name) setTimeout(() => void toolset.close(), 300)
    })
    const result = await agent.run('long, then sum')
    expect(toolResult(result.messages, 'c1')).toMatch(/was closed during "trigger-long-running-operation"/)
    expect(toolResult(result.messages, 'c2')).toMatch(/was closed; its tools are no longer available/)
    await processGone(pid)
    expect(toolset.pid).toBeUndefined()
  })
})
