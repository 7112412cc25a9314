import {
  type Attributes,
  context,
  SpanKind,
  SpanStatusCode,
  type TextMapPropagator,
  type TracerProvider,
  trace,
} from '@opentelemetry/api'
import { ERROR_TYPE, GenAI, Mcp, Operation } from './attributes.ts'
import { json, serverOf } from './model-spans.ts'
import { isTracerProviderRegistered, signalboxTracer } from './tracer-provider.ts'
import { W3CTraceContext } from './w3c-trace-context.ts'

/** One request to an MCP server, as `@signalbox/mcp` describes it to an instrumentation (`McpRequestWork`). */
export interface McpClientWork {
  readonly method: string
  readonly server: string
  readonly toolName?: string
  readonly arguments?: unknown
  readonly promptName?: string
  readonly resourceUri?: string
  readonly transport: 'stdio' | 'http'
  readonly url?: URL
  readonly sessionId?: string
  readonly protocolVersion?: string
  requestId?: string | number
}

/** What `traceMcp` attaches: `@signalbox/mcp`'s `McpInstrumentation`. */
export interface McpClientInstrumentation {
  request<T>(work: McpClientWork, send: (meta: Record<string, string>) => Promise<T>): Promise<T>
}

/** What `traceMcp` needs of a toolset (`McpToolset` of `@signalbox/mcp`). */
export interface InstrumentableMcp {
  instrument(instrumentation: McpClientInstrumentation): () => void
}

export interface TraceMcpOptions {
  tracerProvider?: TracerProvider
  /** Record a tool call's arguments and result. Off by default. */
  captureContent?: boolean
  /** How the context goes into `params._meta`. Default: W3C Trace Context (`traceparent`, `tracestate`). */
  propagator?: TextMapPropagator
}

const setter = {
  set: (carrier: Record<string, string>, key: string, value: string) => {
    carrier[key] = value
  },
}

/**
 * MCP client spans, per the OpenTelemetry MCP semantic conventions: one CLIENT span per request
 * the toolset sends (`tools/call <tool>`, `tools/list`, `resources/read`, `prompts/get <prompt>`...),
 * a child of the span active when it is sent (the agent's tool call), its context in the request's
 * `params._meta` (`traceparent`, `tracestate`) so an instrumented server continues the trace.
 * Without a tracer provider nothing is attached. Returns the detach.
 */
export function traceMcp(toolset: InstrumentableMcp, options: TraceMcpOptions = {}): () => void {
  if (!isTracerProviderRegistered(options.tracerProvider)) return () => {}
  const tracer = signalboxTracer(options.tracerProvider)
  const propagator = options.propagator ?? new W3CTraceContext()
  const content = options.captureContent ?? false
  return toolset.instrument({
    async request<T>(work: McpClientWork, send: (meta: Record<string, string>) => Promise<T>): Promise<T> {
      const target = work.toolName ?? work.promptName
      const span = tracer.startSpan(target ? `${work.method} ${target}` : work.method, {
        kind: SpanKind.CLIENT,
        attributes: requestAttributes(work, content),
      })
      const meta: Record<string, string> = {}
      propagator.inject(trace.setSpan(context.active(), span), meta, setter)
      let result: T
      try {
        const sent = send(meta)
        if (work.requestId !== undefined) span.setAttribute(Mcp.requestId, String(work.requestId))
        result = await sent
      } catch (error) {
        const code = (error as { code?: unknown })?.code
        const message = error instanceof Error ? error.message : String(error)
        // A JSON-RPC error by its code; anything else (the transport failed) by its class.
        const type = typeof code === 'number' ? String(code) : error instanceof Error ? error.name : 'Error'
        span.setAttributes({
          [ERROR_TYPE]: type,
          ...(typeof code === 'number' ? { [Mcp.responseStatusCode]: String(code) } : {}),
        })
        span.setStatus({ code: SpanStatusCode.ERROR, message })
        span.end()
        throw error
      }
      const outcome = result as { isError?: unknown; content?: unknown; structuredContent?: unknown }
      if (work.method === 'tools/call' && outcome?.isError === true) {
        span.setAttribute(ERROR_TYPE, 'tool_error')
        span.setStatus({ code: SpanStatusCode.ERROR, message: 'the tool reported an error' })
      } else if (content && work.method === 'tools/call') {
        span.setAttribute(GenAI.toolCallResult, json(outcome?.structuredContent ?? outcome?.content))
      }
      span.end()
      return result
    },
  })
}

function requestAttributes(work: McpClientWork, content: boolean): Attributes {
  const http = work.transport === 'http'
  return {
    [Mcp.methodName]: work.method,
    ...(work.method === 'tools/call' ? { [GenAI.operationName]: Operation.executeTool } : {}),
    ...(work.toolName ? { [GenAI.toolName]: work.toolName } : {}),
    ...(work.promptName ? { [GenAI.promptName]: work.promptName } : {}),
    ...(work.resourceUri ? { [Mcp.resourceUri]: work.resourceUri } : {}),
    ...(work.sessionId ? { [Mcp.sessionId]: work.sessionId } : {}),
    ...(work.protocolVersion ? { [Mcp.protocolVersion]: work.protocolVersion } : {}),
    // stdio is a pipe; Streamable HTTP runs over TCP.
    [Mcp.networkTransport]: http ? 'tcp' : 'pipe',
    ...(http ? { [Mcp.networkProtocolName]: 'http' } : {}),
    ...(work.url ? serverOf(work.url.href) : {}),
    ...(content && work.arguments !== undefined ? { [GenAI.toolCallArguments]: json(work.arguments) } : {}),
  }
}
