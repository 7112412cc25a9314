import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema, ErrorCode, McpError, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { type Clock, jsonSchemaTool, systemClock, type Tool, type ToolContext, ToolError } from '@signalbox/core'
import { untilAborted } from '@signalbox/core/internal'
import { type McpCallResult, resultText } from './call-result.ts'
import { type CallInFlight, elicit, type McpElicitationOptions } from './elicitation.ts'
import { McpClosedError, McpConnectError, McpServerLostError } from './errors.ts'
import { type McpInstrumentation, McpInstruments, type McpRequestWork } from './instrumentation.ts'
import { McpConnection, type McpServer, type McpSession, type RestartBackoff } from './mcp-connection.ts'
import {
  type McpPrompt,
  type McpPromptMessages,
  type McpResource,
  promptMessages,
  resourceText,
  resourceTools,
} from './resources.ts'
import { compileArgumentsValidator } from './schema-validator.ts'
import { mapToolNames } from './tool-names.ts'
import {
  allowed,
  approvalFor,
  checkNames,
  type McpApproval,
  type McpArguments,
  type McpToolFilter,
  type McpToolInfo,
} from './tool-policy.ts'

export type McpToolsOptions = McpServer & {
  /** Used in messages and logs. Default: the command line, or the URL's host. */
  name?: string
  /** Put before every tool name (e.g. `fs_`), so two servers' tools cannot clash. */
  prefix?: string
  /** Which of the server's tools the agent gets (by the server's names). Default: all. */
  filter?: McpToolFilter
  /**
   * Which calls wait for a reviewer's yes. Tools it does not decide get the default of their
   * annotations (`destructiveHint` asks, `readOnlyHint` does not; see `annotations`).
   */
  needsApproval?: McpApproval
  /** Let the tools' `readOnlyHint` / `destructiveHint` set the approval `needsApproval` leaves open. Default true. */
  annotations?: boolean
  /** Route the server's questions to the user (`elicitation/create`) to a person. Default: the server may not ask. */
  elicitation?: McpElicitationOptions
  /** Also give the agent the server's resources, as `list_resources` / `read_resource` tools. Default false. */
  resources?: boolean
  /** Per call, like a native tool's `timeoutMs` (it includes a person's answer to the server's question). Default 60 s; with `elicitation`, its timeout + 60 s. */
  timeoutMs?: number
  /** For the start and the MCP handshake. Default 30 s. */
  connectTimeoutMs?: number
  restartBackoff?: RestartBackoff
  clock?: Clock
}

/** What `keepUpdated` needs of an agent: its tools, and a way to replace them. */
export interface ToolHolder {
  readonly tools: readonly Tool<any>[]
  setTools(tools: readonly Tool<any>[]): void
}

/**
 * An MCP server's tools as signalbox tools. The server starts on `connect()` or the first
 * `tools()` and is shared by everything holding this instance; `close()` stops it. When the
 * server says its tool list changed, the list is fetched again (`onToolsChanged`, `keepUpdated`).
 */
export class McpToolset {
  readonly name: string
  readonly #options: McpToolsOptions
  readonly #connection: McpConnection
  readonly #instruments = new McpInstruments()
  readonly #listeners = new Set<(tools: Tool<McpArguments>[]) => void>()
  /** The tool calls in flight, per session: a server's question belongs to one of them. */
  readonly #calls = new Map<McpSession, Set<CallInFlight>>()
  #current: Promise<Tool<McpArguments>[]> | undefined
  #checked = false
  #refreshing: Promise<void> | undefined
  #refreshAgain = false

  constructor(options: McpToolsOptions) {
    this.#options = options
    this.name = options.name ?? defaultName(options)
    const elicitation = options.elicitation
    this.#connection = new McpConnection(options, {
      name: this.name,
      clock: options.clock ?? systemClock,
      connectTimeoutMs: options.connectTimeoutMs ?? 30_000,
      backoff: options.restartBackoff ?? {},
      ...(elicitation ? { capabilities: { elicitation: { form: {} } } } : {}),
      setup: (session) => {
        session.client.setNotificationHandler(ToolListChangedNotificationSchema, () => this.#changed())
        if (elicitation) {
          session.client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
            elicit(this.name, request, [...(this.#calls.get(session) ?? [])], elicitation, extra.signal),
          )
        }
      },
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

  /** The server's tools (as filtered), listed on the first call and again whenever the server says the list changed. */
  tools(options: { signal?: AbortSignal } = {}): Promise<Tool<McpArguments>[]> {
    if (!this.#current) {
      const listing = this.#list()
      this.#current = listing
      // A failed start is not remembered: the next call tries again.
      listing.catch(() => {
        if (this.#current === listing) this.#current = undefined
      })
    }
    return untilAborted(this.#current, options.signal, `Listing the tools of "${this.name}"`)
  }

  /** Called with the new list each time the server's tool list changed and was fetched again. Returns the unsubscribe. */
  onToolsChanged(listener: (tools: Tool<McpArguments>[]) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /**
   * Keeps an agent's tools in step with the server's list: when it changes, the agent's tools from
   * this server are replaced (its other tools stay), from the next model call of its runs on.
   */
  keepUpdated(agent: ToolHolder): () => void {
    let mine = new Set<Tool<any>>()
    void this.#current?.then(
      (tools) => {
        mine = new Set(tools)
      },
      () => {},
    )
    return this.onToolsChanged((tools) => {
      agent.setTools([...agent.tools.filter((tool) => !mine.has(tool)), ...tools])
      mine = new Set(tools)
    })
  }

  /** Wraps every request sent to the server (e.g. tracing, `traceMcp` of @signalbox/otel). Returns the detach. */
  instrument(instrumentation: McpInstrumentation): () => void {
    return this.#instruments.attach(instrumentation)
  }

  /** The resources the server lists. */
  async listResources(options: { signal?: AbortSignal } = {}): Promise<McpResource[]> {
    const session = await this.#connection.session()
    const resources: McpResource[] = []
    let cursor: string | undefined
    do {
      const page = await this.#request(session, { method: 'resources/list' }, (meta) =>
        session.client.listResources(params(cursor, meta), signalOption(options.signal)),
      )
      resources.push(...(page.resources as McpResource[]))
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return resources
  }

  /** One resource's contents, as text (binary contents as a short note). */
  async readResource(uri: string, options: { signal?: AbortSignal } = {}): Promise<string> {
    const session = await this.#connection.session()
    const result = await this.#request(session, { method: 'resources/read', resourceUri: uri }, (meta) =>
      session.client.readResource({ uri, ...(meta ? { _meta: meta } : {}) }, signalOption(options.signal)),
    )
    return resourceText(result.contents)
  }

  /** The prompts the server offers. */
  async listPrompts(options: { signal?: AbortSignal } = {}): Promise<McpPrompt[]> {
    const session = await this.#connection.session()
    const prompts: McpPrompt[] = []
    let cursor: string | undefined
    do {
      const page = await this.#request(session, { method: 'prompts/list' }, (meta) =>
        session.client.listPrompts(params(cursor, meta), signalOption(options.signal)),
      )
      prompts.push(...(page.prompts as McpPrompt[]))
      cursor = page.nextCursor
    } while (cursor !== undefined)
    return prompts
  }

  /** A prompt filled in by the server: messages to start a run from (`agent.run(messages)`). */
  async prompt(
    name: string,
    args: Record<string, string> = {},
    options: { signal?: AbortSignal } = {},
  ): Promise<McpPromptMessages> {
    const session = await this.#connection.session()
    const result = await this.#request(session, { method: 'prompts/get', promptName: name }, (meta) =>
      session.client.getPrompt({ name, arguments: args, ...(meta ? { _meta: meta } : {}) }, signalOption(options.signal)),
    )
    return promptMessages(result)
  }

  /** Stops the server; calls in flight fail, later calls get a `MCP_CLOSED` error result. */
  close(): Promise<void> {
    this.#listeners.clear()
    return this.#connection.close()
  }

  async #list(): Promise<Tool<McpArguments>[]> {
    const session = await this.#connection.session()
    const listed: McpToolInfo[] = []
    let cursor: string | undefined
    do {
      const page = await this.#request(session, { method: 'tools/list' }, (meta) =>
        session.client.listTools(params(cursor, meta)),
      )
      listed.push(...(page.tools as McpToolInfo[]))
      cursor = page.nextCursor
    } while (cursor !== undefined)
    if (!this.#checked) {
      checkNames(this.name, listed, { needsApproval: this.#options.needsApproval, filter: this.#options.filter })
      this.#checked = true
    }
    const kept = listed.filter((info) => allowed(this.#options.filter, info))
    const names = mapToolNames(
      this.name,
      kept.map((t) => t.name),
      this.#options.prefix,
    )
    const tools = kept.map((info) => this.#tool(info, names.get(info.name) as string))
    if (this.#options.resources) tools.push(...(resourceTools(this.name, this, this.#options.prefix) as Tool<McpArguments>[]))
    return tools
  }

  /** The server said its tool list changed: fetched again (one fetch at a time, the last notice always followed). */
  #changed(): void {
    if (this.#refreshing) {
      this.#refreshAgain = true
      return
    }
    this.#refreshing = (async () => {
      do {
        this.#refreshAgain = false
        try {
          const tools = await this.#list()
          this.#current = Promise.resolve(tools)
          for (const listener of [...this.#listeners]) {
            try {
              listener(tools)
            } catch {
              // A listener's failure is its own.
            }
          }
        } catch {
          // The list could not be fetched (server gone, a clash of names): the tools stay as they were.
        }
      } while (this.#refreshAgain && !this.#connection.closed)
    })().finally(() => {
      this.#refreshing = undefined
    })
  }

  #tool(info: McpToolInfo, name: string): Tool<McpArguments> {
    const elicitationMs = this.#options.elicitation ? (this.#options.elicitation.timeoutMs ?? 5 * 60_000) : undefined
    const timeoutMs = this.#options.timeoutMs ?? (elicitationMs === undefined ? 60_000 : elicitationMs + 60_000)
    const needsApproval = approvalFor(this.#options.needsApproval, info, this.#options.annotations !== false)
    return jsonSchemaTool<McpArguments>({
      name,
      description: info.description ?? info.title ?? '',
      parameters: info.inputSchema,
      validate: compileArgumentsValidator(info.inputSchema, info.name),
      timeoutMs,
      ...(needsApproval === undefined ? {} : { needsApproval }),
      execute: (args, context) => this.#call(info.name, name, args, context, timeoutMs),
    })
  }

  async #call(mcpName: string, toolName: string, args: McpArguments, context: ToolContext, timeoutMs: number): Promise<string> {
    for (let attempt = 1; ; attempt++) {
      const session = await this.#session(context.signal)
      session.inFlight += 1
      const inFlight: CallInFlight = { context, toolName }
      const calls = this.#calls.get(session) ?? new Set()
      this.#calls.set(session, calls.add(inFlight))
      try {
        const call = this.#request(session, { method: 'tools/call', toolName: mcpName, arguments: args }, (meta) =>
          session.client.callTool({ name: mcpName, arguments: args, ...(meta ? { _meta: meta } : {}) }, undefined, {
            signal: context.signal,
            // A little after the agent's own timeout, so the agent's typed timeout is what the model reads.
            timeout: timeoutMs + 1_000,
          }),
        )
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
        calls.delete(inFlight)
        if (calls.size === 0) this.#calls.delete(session)
      }
    }
  }

  /** Sends one request through the instrumentations, telling them its JSON-RPC id once it is sent. */
  #request<T>(
    session: McpSession,
    what: Pick<McpRequestWork, 'method' | 'toolName' | 'arguments' | 'promptName' | 'resourceUri'>,
    send: (meta: Record<string, string> | undefined) => Promise<T>,
  ): Promise<T> {
    const work: McpRequestWork = {
      ...what,
      server: this.name,
      transport: session.transport,
      ...(session.url ? { url: session.url } : {}),
      ...(session.sessionId ? { sessionId: session.sessionId } : {}),
      ...(session.protocolVersion ? { protocolVersion: session.protocolVersion } : {}),
    }
    return this.#instruments.request(work, (meta) => {
      // The SDK sends a request synchronously when it is called: its id is known right after.
      const sent = send(meta)
      work.requestId = session.lastRequestId
      return sent
    })
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

/** A paginated request's params: the cursor and the `_meta` the instrumentations add, when there are any. */
function params(cursor: string | undefined, meta: Record<string, string> | undefined) {
  if (cursor === undefined && meta === undefined) return undefined
  return { ...(cursor === undefined ? {} : { cursor }), ...(meta ? { _meta: meta } : {}) }
}

const signalOption = (signal: AbortSignal | undefined) => (signal ? { signal } : undefined)

/** Gives an agent the tools of an MCP server, over stdio (`command`) or Streamable HTTP (`url`). */
export function mcpTools(options: McpToolsOptions): McpToolset {
  return new McpToolset(options)
}

function defaultName(options: McpToolsOptions): string {
  if ('url' in options) return new URL(options.url).host
  const line = [options.command, ...(options.args ?? [])].join(' ')
  return line.length > 60 ? `${line.slice(0, 57)}...` : line
}
