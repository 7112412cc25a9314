import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { ClientCapabilities, JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'
import type { Clock } from '@signalbox/core'
import { sleep } from '@signalbox/core/internal'
import { McpClosedError, McpConnectError, McpServerLostError } from './errors.ts'

/** An MCP server run as a child process, spoken to over its stdin/stdout. */
export interface McpStdioServer {
  command: string
  args?: string[]
  /** Added to a small safe default environment (PATH, HOME, ...), not to the whole of ours. */
  env?: Record<string, string>
  cwd?: string
  /** Where the server's own log lines go. Default `inherit` (our stderr). */
  stderr?: 'inherit' | 'ignore'
}

/** An MCP server reached over Streamable HTTP. */
export interface McpHttpServer {
  url: string | URL
  /** Sent with every request (e.g. `Authorization`). */
  headers?: Record<string, string>
  /**
   * OAuth through the MCP SDK's provider interface: on a 401 the SDK discovers the server's
   * authorization server (RFC 9728, RFC 8414), gets a token through the provider (e.g. the SDK's
   * `ClientCredentialsProvider` for machine-to-machine) and retries; tokens are refreshed the same way.
   */
  authProvider?: OAuthClientProvider
}

export type McpServer = McpStdioServer | McpHttpServer

export interface RestartBackoff {
  /** Wait before the first restart after a crash. Default 250 ms. */
  initialDelayMs?: number
  /** Cap on the doubling wait. Default 30 s. */
  maxDelayMs?: number
}

export interface McpConnectionOptions {
  name: string
  clock: Clock
  connectTimeoutMs: number
  backoff: RestartBackoff
  /** What this client offers the server (e.g. `elicitation`). */
  capabilities?: ClientCapabilities
  /** Installs the client's handlers (server requests, notifications) on each new session, before it connects. */
  setup?(session: McpSession): void
}

/** One live connection: the SDK client, and a promise that rejects when the connection breaks. */
export interface McpSession {
  readonly client: Client
  readonly lost: Promise<never>
  readonly pid: number | undefined
  live: boolean
  inFlight: number
  /** `stdio` (a child process's pipes) or `http` (Streamable HTTP). */
  readonly transport: 'stdio' | 'http'
  /** The server's URL (HTTP). */
  readonly url: URL | undefined
  /** The session id the server gave (HTTP), once it gave one. */
  readonly sessionId: string | undefined
  /** The MCP protocol version agreed at the handshake. */
  readonly protocolVersion: string | undefined
  /** The JSON-RPC id of the last request sent (requests are sent synchronously when the client is called). */
  readonly lastRequestId: string | number | undefined
  /** Ends the session politely (HTTP: DELETE, so the server frees it) and closes the client. */
  end(): Promise<void>
}

const isHttp = (server: McpServer): server is McpHttpServer => 'url' in server

/** A failing HTTP ping within this long means the server is gone. */
const PROBE_TIMEOUT_MS = 5_000

/**
 * Owns the server's lifecycle: started on first use, shared by every tool and agent using it,
 * restarted after a crash (waiting longer after each crash in a row), stopped by `close()`.
 */
export class McpConnection {
  readonly #server: McpServer
  readonly #options: McpConnectionOptions
  readonly #closing = new AbortController()
  #session: McpSession | undefined
  readonly #rejecters = new WeakMap<McpSession, (error: unknown) => void>()
  #opening: Promise<McpSession> | undefined
  #failures = 0
  #retryAt = 0

  constructor(server: McpServer, options: McpConnectionOptions) {
    this.#server = server
    this.#options = options
  }

  get closed(): boolean {
    return this.#closing.signal.aborted
  }

  /** The server's process id (stdio, while it runs). */
  get pid(): number | undefined {
    return this.#session?.pid
  }

  /** The live session, connecting (or reconnecting, after the backoff) if there is none. */
  async session(): Promise<McpSession> {
    if (this.closed) throw new McpClosedError(this.#options.name)
    if (this.#session) return this.#session
    this.#opening ??= this.#open().finally(() => {
      this.#opening = undefined
    })
    return this.#opening
  }

  /** A call went through: the next crash restarts without waiting. */
  succeeded(): void {
    this.#failures = 0
  }

  /**
   * Drops a broken session: its calls fail at once and the next call reconnects, after the
   * backoff if it `crashed` (default), at once if the server merely forgot the session.
   */
  lose(session: McpSession, cause?: unknown, options: { crashed?: boolean } = {}): void {
    if (!session.live) return
    session.live = false
    if (this.#session === session) {
      this.#session = undefined
      if (!this.closed && options.crashed !== false) this.#failed()
    }
    this.#rejecters.get(session)?.(new McpServerLostError(this.#options.name, cause))
    session.client.close().catch(() => {})
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.#closing.abort(new McpClosedError(this.#options.name))
    const session = this.#session ?? (await this.#opening?.catch(() => undefined))
    this.#session = undefined
    if (session) {
      session.live = false
      this.#rejecters.get(session)?.(new McpClosedError(this.#options.name))
      await session.end()
    }
  }

  #failed(): void {
    this.#failures += 1
    const initial = this.#options.backoff.initialDelayMs ?? 250
    const max = this.#options.backoff.maxDelayMs ?? 30_000
    this.#retryAt = this.#options.clock.now() + Math.min(max, initial * 2 ** (this.#failures - 1))
  }

  async #open(): Promise<McpSession> {
    const { name, clock } = this.#options
    const signal = this.#closing.signal
    const wait = this.#retryAt - clock.now()
    if (wait > 0) await sleep(wait, { clock, signal })
    const client = new Client({ name: 'signalbox', version: '0.1.0' }, { capabilities: this.#options.capabilities ?? {} })
    const url = isHttp(this.#server) ? new URL(this.#server.url) : undefined
    const transport = isHttp(this.#server)
      ? new StreamableHTTPClientTransport(url as URL, {
          ...(this.#server.headers ? { requestInit: { headers: this.#server.headers } } : {}),
          ...(this.#server.authProvider ? { authProvider: this.#server.authProvider } : {}),
        })
      : new StdioClientTransport({
          command: this.#server.command,
          ...(this.#server.args ? { args: this.#server.args } : {}),
          ...(this.#server.env ? { env: this.#server.env } : {}),
          ...(this.#server.cwd ? { cwd: this.#server.cwd } : {}),
          stderr: this.#server.stderr ?? 'inherit',
        })
    let reject!: (error: unknown) => void
    const lost = new Promise<never>((_, fail) => {
      reject = fail
    })
    lost.catch(() => {})
    // What the spans of the calls name: the request ids, the agreed protocol version.
    let lastRequestId: string | number | undefined
    let protocolVersion: string | undefined
    const send = transport.send.bind(transport)
    transport.send = ((message: JSONRPCMessage, ...rest: unknown[]) => {
      if ('method' in message && 'id' in message) lastRequestId = message.id
      return (send as (message: JSONRPCMessage, ...rest: unknown[]) => Promise<void>)(message, ...rest)
    }) as typeof transport.send
    const setProtocolVersion = (transport as { setProtocolVersion?: (version: string) => void }).setProtocolVersion?.bind(
      transport,
    )
    ;(transport as { setProtocolVersion?: (version: string) => void }).setProtocolVersion = (version) => {
      protocolVersion = version
      setProtocolVersion?.(version)
    }
    const session: McpSession = {
      client,
      lost,
      live: true,
      inFlight: 0,
      transport: url ? 'http' : 'stdio',
      url,
      get sessionId() {
        return transport instanceof StreamableHTTPClientTransport ? transport.sessionId : undefined
      },
      get protocolVersion() {
        return protocolVersion
      },
      get lastRequestId() {
        return lastRequestId
      },
      async end() {
        if (transport instanceof StreamableHTTPClientTransport) {
          await transport.terminateSession().catch(() => {})
        }
        await client.close().catch(() => {})
      },
      get pid() {
        return transport instanceof StdioClientTransport ? (transport.pid ?? undefined) : undefined
      },
    }
    this.#rejecters.set(session, reject)
    client.onclose = () => this.lose(session)
    if (isHttp(this.#server)) {
      // A broken response stream leaves the SDK's request waiting for its timeout: a ping tells a
      // hiccup (the SDK resumes the stream) from a dead server (the calls fail now).
      let probing = false
      client.onerror = () => {
        if (probing || !session.live || session.inFlight === 0) return
        probing = true
        client.ping({ timeout: PROBE_TIMEOUT_MS }).then(
          () => {
            probing = false
          },
          (error: unknown) => this.lose(session, error),
        )
      }
    }
    this.#options.setup?.(session)
    try {
      await client.connect(transport, { signal, timeout: this.#options.connectTimeoutMs })
    } catch (error) {
      session.live = false
      await client.close().catch(() => {})
      if (this.closed) throw new McpClosedError(name)
      this.#failed()
      throw new McpConnectError(name, error)
    }
    if (this.closed) {
      session.live = false
      await client.close().catch(() => {})
      throw new McpClosedError(name)
    }
    this.#session = session
    return session
  }
}
