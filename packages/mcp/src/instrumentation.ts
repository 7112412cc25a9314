/** One request to the MCP server about to be sent, as an instrumentation (tracing) sees it. */
export interface McpRequestWork {
  /** The MCP method: `tools/call`, `tools/list`, `resources/list`, `resources/read`, `prompts/list`, `prompts/get`. */
  readonly method: string
  /** The toolset's name for the server. */
  readonly server: string
  /** `tools/call`: the tool, by the server's name for it. */
  readonly toolName?: string
  /** `tools/call`: the arguments sent. */
  readonly arguments?: unknown
  /** `prompts/get`: the prompt. */
  readonly promptName?: string
  /** `resources/read`: the resource. */
  readonly resourceUri?: string
  readonly transport: 'stdio' | 'http'
  /** The server's URL (HTTP). */
  readonly url?: URL
  /** The MCP session (HTTP), once the server gave one. */
  readonly sessionId?: string
  /** The MCP protocol version agreed at the handshake. */
  readonly protocolVersion?: string
  /** The JSON-RPC id of the request, set as soon as `send` has sent it. */
  requestId?: string | number
}

/**
 * Wraps the requests a toolset sends its MCP server, e.g. in a span. `send(meta)` sends the
 * request with `meta` added to its `params._meta` (where trace context travels: `traceparent`,
 * `tracestate`) and resolves with the server's result; call it exactly once and return its
 * outcome unchanged: an instrumentation watches, it never decides.
 */
export interface McpInstrumentation {
  request<T>(work: McpRequestWork, send: (meta: Record<string, string>) => Promise<T>): Promise<T>
}

/** The instrumentations attached to a toolset; with none, a request is sent as it is. */
export class McpInstruments {
  readonly #attached: McpInstrumentation[] = []

  attach(instrumentation: McpInstrumentation): () => void {
    if (!instrumentation || typeof instrumentation.request !== 'function')
      throw new TypeError('An MCP instrumentation needs a request(work, send) function.')
    this.#attached.push(instrumentation)
    return () => {
      const at = this.#attached.indexOf(instrumentation)
      if (at >= 0) this.#attached.splice(at, 1)
    }
  }

  /** Sends through every attached instrumentation, the first attached outermost; their `_meta` entries merged. */
  request<T>(work: McpRequestWork, send: (meta: Record<string, string> | undefined) => Promise<T>): Promise<T> {
    const attached = [...this.#attached]
    if (attached.length === 0) return send(undefined)
    const through = (index: number, meta: Record<string, string>): Promise<T> => {
      const instrumentation = attached[index]
      if (instrumentation === undefined) return send(Object.keys(meta).length > 0 ? meta : undefined)
      return instrumentation.request(work, (more) => through(index + 1, { ...meta, ...more }))
    }
    return through(0, {})
  }
}
