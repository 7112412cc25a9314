/**
 * Local inspection, the way `@statelyai/inspect` documents it for Node: its inspector server (a
 * bridge page that embeds the Stately inspector and a WebSocket) plus its WebSocket inspector as
 * the client. Our converter sits in front, so ids are unique and contents stay private by default.
 */
import type { StatelyInspectionEvent } from '@statelyai/inspect'
import type { InspectorWireEvent } from './convert.ts'
import { createStatelyInspector, type Inspector, type InspectorOptions } from './inspector.ts'
import { startBridgeServer } from './server.ts'
import { loadStatelyClient } from './stately.ts'

export interface LocalInspectorOptions extends InspectorOptions {
  /** Port of the bridge page and its WebSocket. Default 8080. */
  port?: number
  /** The inspector UI the bridge page embeds. Default the hosted Stately inspector (needs internet). */
  url?: string
  /** Open a browser on the bridge page. Default false. */
  autoOpen?: boolean
}

export interface LocalInspector extends Inspector {
  /** The bridge page to open in a browser: `http://localhost:<port>`. */
  readonly url: string
  readonly port: number
  /** Closes the WebSocket client and the server (and the pages connected to it). */
  stop(): Promise<void>
}

/** The client half: `createWebSocketInspector` used as a plain sender of already converted events. */
export interface WebSocketSender {
  send(event: InspectorWireEvent): void
  stop(): void
}

export async function createWebSocketSender(url: string, options: { maxDeferredEvents?: number } = {}): Promise<WebSocketSender> {
  const { createWebSocketInspector } = await loadStatelyClient()
  const client = createWebSocketInspector({
    url,
    // Events sent before the socket opens are kept (and sent on open) up to this many.
    maxDeferredEvents: options.maxDeferredEvents ?? 10_000,
    // The default (10) would cut contents deeper than that when they are opted in.
    serializationDepthLimit: 64,
  })
  let stopped = false
  return {
    send(event) {
      if (!stopped) client.adapter.send(event as unknown as StatelyInspectionEvent)
    },
    stop() {
      if (stopped) return
      stopped = true
      // The adapter reconnects every 5 s after any socket error, even after `stop()`; closing a
      // socket that is still connecting raises one. Disarm that handler before closing.
      const ws = (client.adapter as unknown as { ws?: { onerror: unknown } }).ws
      if (ws) ws.onerror = () => {}
      client.stop()
    },
  }
}

/**
 * Starts the Stately inspector server on `port` and returns an inspector connected to it:
 *
 *   const inspector = await createLocalInspector({ port: 8080 })
 *   const agent = createAgent({ ..., inspect: inspector.inspect })
 *   // open inspector.url (http://localhost:8080)
 */
export async function createLocalInspector(options: LocalInspectorOptions = {}): Promise<LocalInspector> {
  const server = await startBridgeServer({
    port: options.port ?? 8080,
    ...(options.url ? { url: options.url } : {}),
    ...(options.autoOpen ? { autoOpen: true } : {}),
  })
  const sender = await createWebSocketSender(server.wsUrl).catch(async (error: unknown) => {
    await server.stop()
    throw error
  })
  const inspector = createStatelyInspector({ ...options, send: (event) => sender.send(event) })
  let stopped: Promise<void> | undefined
  return {
    ...inspector,
    url: server.pageUrl,
    port: server.port,
    stop() {
      stopped ??= (async () => {
        sender.stop()
        await server.stop()
      })()
      return stopped
    },
  }
}
