/**
 * Our own MCP server (test-server.ts) as a real process, over stdio or Streamable HTTP,
 * killed after the test.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { McpServer } from '@signalbox/mcp'
import { tsScript } from '../built.ts'
import { afterEveryTest } from '../lifecycle.ts'
import { freePort } from '../nats-server.ts'

export const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
export const TEST_SERVER = fileURLToPath(new URL('./test-server.ts', import.meta.url))

export type Transport = 'stdio' | 'http'
export const TRANSPORTS: Transport[] = ['stdio', 'http']

const children: ChildProcess[] = []
afterEveryTest(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue
    const exited = new Promise((resolve) => child.once('exit', resolve))
    process.kill(child.pid as number, 'SIGKILL')
    await exited
  }
})

export interface OurServer {
  /** What `mcpTools` is given to reach it. */
  server: McpServer
  /** HTTP: the server's base URL (also its OAuth issuer). */
  base?: string
}

/**
 * The test server over `transport`. `effects`: the file its destructive tool appends to.
 * `oauth` (HTTP): every MCP request needs a bearer token from its client_credentials endpoint.
 */
export async function ourServer(transport: Transport, options: { effects?: string; oauth?: boolean } = {}): Promise<OurServer> {
  const env: Record<string, string> = options.effects ? { EFFECTS: options.effects } : {}
  if (transport === 'stdio') {
    return {
      server: {
        command: process.execPath,
        args: [...tsScript(TEST_SERVER), 'stdio'],
        cwd: ROOT,
        env,
        stderr: 'ignore',
      },
    }
  }
  const port = await freePort()
  const child = spawn(process.execPath, [...tsScript(TEST_SERVER), 'http', String(port), ...(options.oauth ? ['--oauth'] : [])], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  children.push(child)
  await new Promise<void>((resolve, reject) => {
    let log = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      log += chunk.toString('utf8')
      if (log.includes('listening on port')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`the test server exited (${code}) before listening:\n${log}`)))
  })
  const base = `http://127.0.0.1:${port}`
  return { server: { url: `${base}/mcp` }, base }
}
