/**
 * `@statelyai/inspect/server`'s `createInspectorServer`, with the lifecycle it lacks: it listens
 * without an error handler (a port in use would crash the process), offers no way to know when it
 * listens, and its `stop()` leaves connected pages' sockets open (so a CLI never exits). We run the
 * real server unchanged and keep a handle on its `http.Server` (captured while it is created,
 * synchronously) to add exactly those three things. A port in use becomes `INSPECTOR_PORT_IN_USE`;
 * `@statelyai/inspect` missing (an optional peer dependency), `INSPECTOR_UNAVAILABLE`.
 */
import http from 'node:http'
import type { Socket } from 'node:net'
import { SignalboxError } from '@signalbox/core'
import { loadStatelyServer } from './stately.ts'

/** The hosted Stately inspector the bridge page embeds by default (needs internet). */
export const STATELY_INSPECTOR_URL = 'https://stately.ai/inspect'

export interface BridgeServerOptions {
  /** Port of the bridge page and its WebSocket (all interfaces, as `createInspectorServer` binds). */
  port: number
  /** The inspector UI the bridge page embeds in an iframe. Default the hosted Stately inspector. */
  url?: string
  /** Open a browser on the page. Default false (servers and CI have none). */
  autoOpen?: boolean
}

export interface BridgeServer {
  readonly port: number
  /** The bridge page: open it in a browser. */
  readonly pageUrl: string
  /** Where inspectors and relays send events: `ws://127.0.0.1:<port>`. */
  readonly wsUrl: string
  /** Stops listening and closes every connection (bridge pages included). Idempotent. */
  stop(): Promise<void>
}

/** Starts the Stately bridge server; resolves once it listens, rejects if the port is taken. */
export async function startBridgeServer(options: BridgeServerOptions): Promise<BridgeServer> {
  const { port } = options
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    // Port 0 cannot work: the bridge page hard-codes `ws://localhost:<port>`.
    throw new SignalboxError('INSPECTOR_BAD_PORT', `The inspector needs a fixed port (1-65535), got ${String(port)}.`, {
      fault: 'user',
    })
  }
  const { createInspectorServer } = await loadStatelyServer()
  let server: http.Server | undefined
  const createServer = http.createServer
  const capture = ((...args: Parameters<typeof http.createServer>) => {
    const created = (createServer as (...a: unknown[]) => http.Server)(...args)
    server ??= created
    return created
  }) as typeof http.createServer
  const patchable = http as { createServer: typeof http.createServer }
  patchable.createServer = capture
  let stately: { stop(): void }
  try {
    stately = createInspectorServer({ port, url: options.url ?? STATELY_INSPECTOR_URL, autoOpen: options.autoOpen ?? false })
  } finally {
    patchable.createServer = createServer
  }
  const sockets = new Set<Socket>()
  if (server) {
    const s = server
    // The WebSocketServer re-emits the HTTP server's errors on itself, where nothing listens: an
    // uncaught exception. Errors are handled here instead (it only forwards them).
    s.removeAllListeners('error')
    s.on('connection', (socket: Socket) => {
      sockets.add(socket)
      socket.once('close', () => sockets.delete(socket))
    })
    await new Promise<void>((resolve, reject) => {
      if (s.listening) return resolve()
      const onError = (error: NodeJS.ErrnoException) => {
        s.off('listening', onListening)
        stately.stop()
        reject(
          error.code === 'EADDRINUSE'
            ? new SignalboxError('INSPECTOR_PORT_IN_USE', `Port ${port} is in use: pick another one.`, {
                fault: 'user',
                cause: error,
              })
            : new SignalboxError(
                'INSPECTOR_LISTEN_FAILED',
                `The inspector server could not listen on port ${port}: ${error.message}`,
                { cause: error },
              ),
        )
      }
      const onListening = () => {
        s.off('error', onError)
        resolve()
      }
      s.once('error', onError)
      s.once('listening', onListening)
    })
    // Later errors (a client resetting) must not crash the process.
    s.on('error', () => {})
  }
  let stopped: Promise<void> | undefined
  return {
    port,
    pageUrl: `http://localhost:${port}`,
    wsUrl: `ws://127.0.0.1:${port}`,
    stop() {
      stopped ??= new Promise<void>((resolve) => {
        const listening = server?.listening === true
        server?.once('close', () => resolve())
        stately.stop()
        for (const socket of sockets) socket.destroy()
        if (!listening) return resolve()
        // `close` waits for open connections; they were destroyed just above.
        setTimeout(resolve, 1_000).unref()
      })
      return stopped
    },
  }
}
