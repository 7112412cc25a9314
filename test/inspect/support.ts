/**
 * What the inspection tests connect with, the way the Stately inspector's own parts do: a WebSocket
 * client on the inspector server (as the bridge page does), a tiny local stand-in for the hosted
 * inspector UI (posts `@statelyai.connected` to its parent, records every message it gets), and
 * real headless Chromium to load the bridge page.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import type { InspectorWireEvent } from '@signalbox/actors/inspect'
import type { NatsBus } from '@signalbox/actors/nats'
import { type Browser, type BrowserContextOptions, chromium, type Page } from 'playwright-core'
import WebSocket from 'ws'
import { tsScript } from '../support/built.ts'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** Stands in for https://stately.ai/inspect inside the bridge page's iframe. */
export const UI_PAGE = `<!doctype html>
<html><head><title>inspector ui stand-in</title></head><body>
<script>
  window.received = [];
  window.addEventListener('message', (event) => {
    const data = event.data;
    if (data && typeof data === 'object' && typeof data.type === 'string' && data.type.startsWith('@xstate.')) window.received.push(data);
  });
  // What the real inspector UI does once it is ready (createBrowserReceiver).
  window.parent.postMessage({ type: '@statelyai.connected' }, '*');
</script>
</body></html>`

export interface UiServer {
  readonly url: string
  close(): Promise<void>
}

export async function startUiServer(): Promise<UiServer> {
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
    res.end(UI_PAGE)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/ui.html`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** A WebSocket client on the inspector server, like the bridge page's: collects every event. */
export interface WsCollector {
  readonly events: InspectorWireEvent[]
  /** Resolves when the server closes the connection (or `close()` is called). */
  readonly closed: Promise<void>
  close(): void
}

export async function connectCollector(port: number): Promise<WsCollector> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}`)
  const events: InspectorWireEvent[] = []
  ws.on('message', (data) => events.push(JSON.parse(data.toString('utf8')) as InspectorWireEvent))
  await new Promise<void>((resolve, reject) => {
    ws.once('open', resolve)
    ws.once('error', reject)
  })
  ws.on('error', () => {})
  const closed = new Promise<void>((resolve) => ws.once('close', resolve))
  return { events, closed, close: () => ws.terminate() }
}

/** A test file's share of its worker's Chromium: pages of its own, closed with it. */
export interface TestBrowser {
  newPage(options?: BrowserContextOptions): Promise<Page>
  /** Closes this file's pages (each with its own context); the browser stays for the worker's next file. */
  close(): Promise<void>
}

/** One Chromium per test worker: a launch costs about 2.3 s of CPU, a page in its own context a tenth of it. */
let workerBrowser: Promise<Browser> | undefined

/** This file's pages in the worker's Chromium, launched by the first file that asks. */
export async function chromiumForFile(): Promise<TestBrowser> {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install -y chromium (scripts/test.sh does)`)
  if (!workerBrowser) workerBrowser = launch()
  let browser = await workerBrowser
  if (!browser.isConnected()) {
    workerBrowser = launch()
    browser = await workerBrowser
  }
  const pages = new Set<Page>()
  return {
    async newPage(options) {
      const page = await browser.newPage(options)
      pages.add(page)
      return page
    },
    async close() {
      await Promise.all([...pages].map((page) => page.close().catch(() => {})))
      pages.clear()
    },
  }
}

function launch(): Promise<Browser> {
  const launched = chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  })
  // A failed launch is not kept: the next file tries again.
  launched.catch(() => {
    if (workerBrowser === launched) workerBrowser = undefined
  })
  return launched
}

/** A TypeScript script run as its own Node process (see `tsScript`), from the repository root. */
export interface ScriptProcess {
  readonly child: ChildProcess
  readonly stdout: () => string
  readonly stderr: () => string
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>
  kill(): void
}

export function runScript(script: string, args: string[], env: NodeJS.ProcessEnv = {}): ScriptProcess {
  const child = spawn(process.execPath, [...tsScript(script), ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString('utf8')
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8')
  })
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code))
    child.once('error', () => resolve(null))
  })
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    kill: () => {
      if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
        try {
          process.kill(child.pid, 'SIGKILL')
        } catch {
          // already gone
        }
      }
    },
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls until `check` returns something truthy; fails after `timeoutMs` with `what`. */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs: number, what: string): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await check()
      if (value) return value as NonNullable<T>
    } catch (error) {
      last = error
    }
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String(last)}` : ''}`)
    await sleep(25)
  }
}

export const ofType = <T extends InspectorWireEvent['type']>(events: InspectorWireEvent[], type: T) =>
  events.filter((event): event is Extract<InspectorWireEvent, { type: T }> => event.type === type)

export const stateOf = (event: InspectorWireEvent): string =>
  event.type === '@xstate.snapshot' ? JSON.stringify(event.snapshot.value ?? null) : ''

/** Deletes the deployment's JetStream stream on the shared server (through the JetStream API). */
export async function deleteStream(bus: NatsBus): Promise<void> {
  await bus.request(`$JS.API.STREAM.DELETE.${bus.streamName}`, '', { timeoutMs: 3_000 }).catch(() => {})
}
