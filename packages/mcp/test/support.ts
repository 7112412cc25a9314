/**
 * Real MCP servers from the npm registry (devDependencies, nothing downloaded at run time), the
 * scripted model over HTTP with a real `OpenAIProvider`, and cleanup of everything started here.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtemp, realpath, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import {
  type Agent,
  type AgentEvent,
  type AgentEventOf,
  type AgentEventType,
  type Message,
  OpenAIProvider,
} from '@signalbox/core'
import { type ScriptedModelServer, type Scripts, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEveryTest } from '../../../test/support/lifecycle.ts'
import type { McpToolset } from '../src/index.ts'

const require = createRequire(import.meta.url)
const serverEntry = (pkg: string) => path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'dist/index.js')

/** `@modelcontextprotocol/server-filesystem`'s entry point. */
export const FILESYSTEM_SERVER = serverEntry('@modelcontextprotocol/server-filesystem')
/** `@modelcontextprotocol/server-everything`'s entry point (`stdio` or `streamableHttp` as its argument). */
export const EVERYTHING_SERVER = serverEntry('@modelcontextprotocol/server-everything')

const cleanups: (() => Promise<void>)[] = []
afterEveryTest(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {})
})

/** Closed after the test. */
export function track<T extends McpToolset>(toolset: T): T {
  cleanups.push(() => toolset.close())
  return toolset
}

/** A fresh temp directory (its real path: the filesystem server resolves symlinks), removed after the test. */
export async function tempDir(): Promise<string> {
  const dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'signalbox-mcp-')))
  cleanups.push(() => rm(dir, { recursive: true, force: true }))
  return dir
}

/** The scripted model server and a real `OpenAIProvider` (the openai SDK over HTTP) pointed at it. */
export async function scriptedModel(scripts: Scripts): Promise<{ server: ScriptedModelServer; provider: OpenAIProvider }> {
  const server = await startScriptedModelServer({ scripts })
  cleanups.push(() => server.close())
  return { server, provider: new OpenAIProvider({ baseURL: server.url, apiKey: 'test-key', model: 'scripted' }) }
}

export function recordEvents(agent: Agent): AgentEvent[] {
  const events: AgentEvent[] = []
  agent.on('*', (event) => {
    events.push(event)
  })
  return events
}

export function eventsOf<T extends AgentEventType>(events: AgentEvent[], type: T): AgentEventOf<T>[] {
  return events.filter((event): event is AgentEventOf<T> => event.type === type)
}

/** What the model read for a call, in the transcript of the request it was sent in. */
export function toolResult(messages: Message[], callId: string): string | undefined {
  const message = messages.find((m) => m.role === 'tool' && m.tool_call_id === callId)
  return message?.role === 'tool' ? message.content : undefined
}

/** Binds port 0, reads the port the OS picked, releases it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo
      probe.close(() => resolve(port))
    })
  })
}

export interface HttpMcpServer {
  readonly url: string
  readonly pid: number | undefined
  /** SIGKILL by pid; resolves when the process is gone. */
  kill(): Promise<void>
  /** Starts it again on the same port. */
  start(): Promise<void>
}

/** server-everything in its Streamable HTTP mode on a free port, killed after the test. */
export async function everythingOverHttp(): Promise<HttpMcpServer> {
  const port = await freePort()
  let child: ChildProcess | undefined
  const start = () =>
    new Promise<void>((resolve, reject) => {
      const proc = spawn(process.execPath, [EVERYTHING_SERVER, 'streamableHttp'], {
        env: { ...process.env, PORT: String(port) },
        stdio: ['ignore', 'ignore', 'pipe'],
      })
      child = proc
      let log = ''
      proc.stderr?.on('data', (chunk: Buffer) => {
        log += chunk.toString('utf8')
        if (log.includes('listening on port')) resolve()
      })
      proc.once('exit', (code) => reject(new Error(`server-everything exited (${code}) before listening:\n${log}`)))
    })
  const kill = async () => {
    const proc = child
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
    const exited = new Promise((resolve) => proc.once('exit', resolve))
    process.kill(proc.pid as number, 'SIGKILL')
    await exited
  }
  cleanups.push(kill)
  await start()
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    get pid() {
      return child?.pid
    },
    kill,
    start,
  }
}

/** Resolves once `pid` is no longer a live process. */
export async function processGone(pid: number): Promise<void> {
  for (;;) {
    try {
      process.kill(pid, 0)
    } catch {
      return
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

export const isAlive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
