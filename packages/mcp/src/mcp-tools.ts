import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js'
import {
  type ApprovalRule,
  type Clock,
  ConfigError,
  jsonSchemaTool,
  systemClock,
  type Tool,
  type ToolContext,
  ToolError,
} from '@signalbox/core'
import { untilAborted } from '@signalbox/core/internal'
import { type McpCallResult, resultText } from './call-result.ts'
import { McpClosedError, McpConnectError, McpServerLostError } from './errors.ts'
import { McpConnection, type McpServer, type McpSession, type RestartBackoff } from './mcp-connection.ts'
import { compileArgumentsValidator } from './schema-validator.ts'
import { mapToolNames } from './tool-names.ts'

export type McpArguments = Record<string, unknown>

/** Decides from the call whether a reviewer must approve it first. */
export type McpApprovalPredicate = (call: { toolName: string; arguments: McpArguments }) => boolean | Promise<boolean>

/**
 * `true` / `false` for every tool, a predicate over the call, or a rule per tool keyed by the
 * server's tool name (tools not named run without approval; a name the server lacks is an error).
 */
export type McpApproval = boolean | McpApprovalPredicate | Record<string, ApprovalRule<McpArguments>>

export type McpToolsOptions = McpServer & {
  /** Used in messages and logs. Default: the command line, or the URL's host. */
  name?: string
  /** Put before every tool name (e.g. `fs_`), so two servers' tools cannot clash. */
  prefix?: string
  needsApproval?: McpApproval
  /** Per call, like a native tool's `timeoutMs`. Default 60 s. */
  timeoutMs?: number
  /** For the start and the MCP handshake. Default 30 s. */
  connectTimeoutMs?: number
  restartBackoff?: RestartBackoff
  clock?: Clock
}

interface McpToolInfo {
  name: string
  description?: string
  title?: string
  inputSchema: Record<string, unknown>
}

/**
 * An MCP server's tools as signalbox tools. The server starts on `connect()` or the first
 * `tools()` and is shared by everything holding this instance; `close()` stops it.
 */
export class McpToolset {
  readonly name: string
  readonly #options: McpToolsOptions
  readonly #connection: McpConnection
  #tools: Promise<Tool<McpArguments>[]> | undefined

  constructor(options: McpToolsOptions) {
    this.#options = options
    this.name = options.name ?? defaultName(options)
    this.#connection = new McpConnection(options, {
      name: this.name,
      clock: options.clock ?? systemClock,
      connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
      backoff: options.restartBackoff ?? {},
    })
  }

  /** The server process id while it runs (stdio servers only). */
  get pid(): number | undefined {
    return this.#connection.pid
  }

  /** Starts the server (if not running) and lists its tools. */
  async connect(options: { signal?: AbortSignal } = {}): Promise<void> {
    await this.tools(options)
  }

  /** The server's tools, listed once on the first call. */
  tools(options: { signal?: AbortSignal } = {}): Promise<Tool<McpArguments>[]> {
    if (!this.#tools) {
      this.#tools = this.#list()
      // A failed start is not remembered: the next call tries again.
      this.#tools.catch(() => {
        this.#tools = undefined
      })
    }
    return untilAborted(this.#tools, options.signal, `Listing the tools of "${this.name}"`)
  }

  /** Stops the server; calls in flight fail, later calls get a `MCP_CLOSED` error result. */
  close(): Promise<void> {
    return this.#connection.close()
  }

  async #list(): Promise<Tool<McpArguments>[]> {
    const session = await this.#connection.session()
    const listed: McpToolInfo[] = []
    let cursor: string | undefined
    do {
      const page = await session.client.listTools(cursor === undefined ? undefined : { cursor })
      listed.push(...(page.tools as McpToolInfo[]))
      cursor = page.nextCursor
    } while (cursor !== undefined)
    const names = mapToolNames(
      this.name,
      listed.map((t) => t.name),
      this.#options.prefix,
    )
    checkApprovalNames(this.name, this.#options.needsApproval, listed)
    return listed.map((info) => this.#tool(info, names.get(info.name) as string))
  }

  #tool(info: McpToolInfo, name: string): Tool<McpArguments> {
    const timeoutMs = this.#options.timeoutMs ?? 60_000
    const needsApproval = approvalFor(this.#options.needsApproval, info.name)
    return jsonSchemaTool<McpArguments>({
      name,
      description: info.description ?? info.title ?? '',
      parameters: info.inputSchema,
      validate: compileArgumentsValidator(info.inputSchema, info.name),
      timeoutMs,
      ...(needsApproval === undefined ? {} : { needsApproval }),
      execute: (args, context) => this.#call(info.name, args, context, timeoutMs),
    })
  }

  async #call(mcpName: string, args: McpArguments, context: ToolContext, timeoutMs: number): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const session = await this.#session(context.signal)
      session.inFlight += 1
      try {
        const call = session.client.callTool({ name: mcpName, arguments: args }, undefined, {
          signal: context.signal,
          // A little after the agent's own timeout, so the agent's typed timeout is what the model reads.
          timeout: timeoutMs + 1_000,
        })
        const result = (await Promise.race([call, session.lost])) as McpCallResult
        this.#connection.succeeded()
        if (result.isError) throw new ToolError('MCP_TOOL_ERROR', resultText(result) || `"${mcpName}" failed.`)
        return resultText(result)
      } catch (error) {
        if (ToolError.is(error) || context.signal.aborted) throw error
        if (attempt === 1 && isSessionRefused(error)) {
          // The HTTP server no longer knows our session (it restarted): it refused the call
          // without running it, so sending it again on a new session cannot run it twice.
          this.#connection.lose(session, error, { crashed: false })
          continue
        }
        throw this.#callError(session, mcpName, error)
      } finally {
        session.inFlight -= 1
      }
    }
  }

  async #session(signal: AbortSignal): Promise<McpSession> {
    try {
      return await untilAborted(this.#connection.session(), signal)
    } catch (error) {
      if (McpConnectError.is(error)) {
        throw new ToolError('MCP_UNAVAILABLE', `${error.message} Try again later, or another way.`, { cause: error })
      }
      if (McpClosedError.is(error)) throw new ToolError('MCP_CLOSED', error.message, { cause: error })
      throw error
    }
  }

  /** What the model reads when a call did not get a result. */
  #callError(session: McpSession, mcpName: string, error: unknown): ToolError {
    if (this.#connection.closed) {
      return new ToolError('MCP_CLOSED', `The MCP server "${this.name}" was closed during "${mcpName}".`, { cause: error })
    }
    if (McpServerLostError.is(error) || !session.live) {
      this.#connection.lose(session, error)
      return new ToolError(
        'MCP_SERVER_LOST',
        `The MCP server "${this.name}" stopped during "${mcpName}"; the call may or may not have taken effect. The server is restarted on the next call.`,
        { cause: error },
      )
    }
    if (error instanceof McpError) {
      if (error.code === ErrorCode.RequestTimeout) {
        return new ToolError('MCP_TIMEOUT', `"${mcpName}" did not answer in time.`, { cause: error })
      }
      return new ToolError('MCP_ERROR', error.message, { cause: error, details: { mcpCode: error.code } })
    }
    // Not a JSON-RPC answer: the transport failed (server unreachable, session unknown after its restart).
    this.#connection.lose(session, error)
    return new ToolError('MCP_UNAVAILABLE', `The MCP server "${this.name}" could not be reached for "${mcpName}".`, {
      cause: error,
    })
  }
}

/** An HTTP 404 (the spec's "session not found") or 400 (what some servers answer instead) to a request in a session. */
const isSessionRefused = (error: unknown) => error instanceof StreamableHTTPError && (error.code === 404 || error.code === 400)

/** Gives an agent the tools of an MCP server, over stdio (`command`) or Streamable HTTP (`url`). */
export function mcpTools(options: McpToolsOptions): McpToolset {
  return new McpToolset(options)
}

function defaultName(options: McpToolsOptions): string {
  if ('url' in options) return new URL(options.url).host
  const line = [options.command, ...(options.args ?? [])].join(' ')
  return line.length > 60 ? `${line.slice(0, 57)}...` : line
}

function approvalFor(rule: McpApproval | undefined, mcpName: string): ApprovalRule<McpArguments> | undefined {
  if (rule === undefined || rule === false) return undefined
  if (rule === true) return true
  if (typeof rule === 'function') return (args) => rule({ toolName: mcpName, arguments: args })
  return rule[mcpName]
}

/** A per-tool approval map naming a tool the server lacks is a typo that would leave a tool ungated. */
function checkApprovalNames(server: string, rule: McpApproval | undefined, listed: McpToolInfo[]): void {
  if (rule === undefined || typeof rule !== 'object') return
  const known = new Set(listed.map((t) => t.name))
  const unknown = Object.keys(rule).filter((name) => !known.has(name))
  if (unknown.length > 0) {
    throw new ConfigError(
      `needsApproval names ${unknown.map((n) => `"${n}"`).join(', ')}, which the MCP server "${server}" does not have (it has: ${[...known].join(', ')}).`,
      { server, unknown },
    )
  }
}
