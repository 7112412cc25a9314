/**
 * `signalbox tools serve --mcp`: a real MCP server (server-filesystem on a temp dir) behind a real
 * tool host process on the shared NATS server, called by an agent in this process over the bus,
 * with the approval decided on the agent's side and the arguments checked on the host.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, realpath, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { discoverTools } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { createAgent, OpenAIProvider, ScriptedReviewer } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { uniquePrefix } from '../support/env.ts'
import { busArgs, cleanupAll, NATS_URL, ROOT, runCli, startProcess } from './support.ts'

const FILESYSTEM_SERVER = path.join(ROOT, 'packages/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js')

let dir: string | undefined
let bus: NatsBus | undefined
let model: ScriptedModelServer | undefined
afterEach(async () => {
  await cleanupAll()
  await bus?.close()
  await model?.close()
  if (dir) await rm(dir, { recursive: true, force: true })
  dir = bus = model = undefined
})

describe('signalbox tools serve --mcp', () => {
  it('puts an MCP server on the bus: a remote agent calls it, behind approvals and host-side validation', async () => {
    const prefix = uniquePrefix()
    dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'signalbox-mcp-cli-')))
    const host = startProcess(
      [
        'tools',
        'serve',
        '--mcp',
        `"${process.execPath}" ${FILESYSTEM_SERVER} '${dir}'`,
        '--approve',
        'write_file',
        ...busArgs(prefix),
      ],
      { name: 'tools' },
    )
    await host.waitFor(/serving \d+ tools: .*write_file \(needs approval\)/)

    bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'mcp-agent' })
    const tools = await discoverTools({ bus, subjects: createSubjects(prefix), names: ['write_file', 'read_text_file'] })
    expect(tools.map((t) => [t.name, Boolean(t.needsApproval)])).toEqual([
      ['write_file', true],
      ['read_text_file', false],
    ])
    const denied = path.join(dir, 'denied.txt')
    const kept = path.join(dir, 'kept.txt')
    model = await startScriptedModelServer({
      scripts: {
        '*': [
          { toolCalls: [{ id: 'c1', name: 'write_file', arguments: { path: denied, content: 'no' } }] },
          { toolCalls: [{ id: 'c2', name: 'write_file', arguments: { path: kept, content: 42 } }] },
          { toolCalls: [{ id: 'c3', name: 'write_file', arguments: { path: kept, content: 'yes' } }] },
          { toolCalls: [{ id: 'c4', name: 'read_text_file', arguments: { path: kept } }] },
          { content: 'done' },
        ],
      },
    })
    const provider = new OpenAIProvider({ baseURL: model.url, apiKey: 'test-key', model: 'scripted' })
    const reviewer = new ScriptedReviewer([false, true, true])
    const result = await createAgent({ id: 'writer', provider, reviewer, tools }).run('write a file')
    const read = (id: string) => result.messages.find((m) => m.role === 'tool' && m.tool_call_id === id)?.content
    expect(result.status).toBe('done')

    expect(existsSync(denied)).toBe(false)
    // Invalid arguments: approved, then refused by the host's schema check before the MCP server.
    expect(read('c2')).toContain('invalid arguments for "write_file", the tool did not run')
    expect(read('c2')).toContain('content: must be string')
    expect(await readFile(kept, 'utf8')).toBe('yes')
    expect(read('c4')).toBe('yes')
    // The host ran exactly the calls that were approved and valid (c2 was answered TOOL_INVALID_ARGUMENTS).
    const calls = host.stdout
      .split('\n')
      .filter((l) => l.includes('→ call'))
      .map((l) => l.split(/\s+/)[3])
    expect(calls).toEqual(['write_file', 'read_text_file'])

    expect(await host.stop('SIGTERM')).toBe(0)
    expect(host.stderr).toContain('tool host stopped')
  })

  it('neither a tools module nor --mcp is a usage error; --approve naming an unknown tool fails clearly', async () => {
    const neither = await runCli(['tools', 'serve', ...busArgs(uniquePrefix())])
    expect(neither.code).toBe(2)
    expect(neither.stderr).toContain('error [USAGE]: give a tools module or --mcp "<command>"')
    dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'signalbox-mcp-cli-')))
    const typo = await runCli([
      'tools',
      'serve',
      '--mcp',
      `"${process.execPath}" ${FILESYSTEM_SERVER} '${dir}'`,
      '--approve',
      'write_fiel',
      ...busArgs(uniquePrefix()),
    ])
    expect(typo.code).toBe(1)
    expect(typo.stderr).toMatch(
      /error \[CONFIG_INVALID\]: needsApproval names "write_fiel", which the MCP server .* does not have/,
    )
  })

  it('--allow serves only the named tools, --deny all but those; an agent lists them without naming them', async () => {
    const prefix = uniquePrefix()
    dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'signalbox-mcp-cli-')))
    const server = `"${process.execPath}" ${FILESYSTEM_SERVER} '${dir}'`
    const host = startProcess(['tools', 'serve', '--mcp', server, '--allow', 'read_text_file,write_file', ...busArgs(prefix)], {
      name: 'tools',
    })
    await host.waitFor(/serving 2 tools: /)
    bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'mcp-lister' })
    const listed = await discoverTools({ bus, subjects: createSubjects(prefix) })
    // write_file is destructive by its annotations: announced as needing approval without --approve.
    expect(listed.map((t) => [t.name, Boolean(t.needsApproval)])).toEqual([
      ['read_text_file', false],
      ['write_file', true],
    ])
    const denied = await runCli(['tools', 'serve', '--mcp', server, '--deny', 'nope', ...busArgs(uniquePrefix())])
    expect(denied.code).toBe(1)
    expect(denied.stderr).toMatch(/filter\.deny names "nope", which the MCP server .* does not have/)
    const misplaced = await runCli([
      'tools',
      'serve',
      'examples/distributed/claw-tools.ts',
      '--allow',
      'move_claw',
      ...busArgs(uniquePrefix()),
    ])
    expect(misplaced.code).toBe(2)
    expect(misplaced.stderr).toContain('--allow and --deny pick the tools of an MCP server')
  })
})
