import type { Agent, Answerer, Reviewer, Tool } from '@signalbox/core'
import type { Bus } from '@signalbox/core/bus'
import { CliError, type CommandContext, type OptionSpec } from './cli.ts'

/** The tracing flags every long-running command takes (run, host, tools serve, review). */
export const OTLP_OPTIONS: Record<'otlp' | 'otlp-content', OptionSpec> = {
  otlp: {
    type: 'string',
    valueName: '<url>',
    description: 'export OpenTelemetry spans (OTLP/HTTP) to this URL; trace context rides the bus',
    default: '$OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else $OTEL_EXPORTER_OTLP_ENDPOINT/v1/traces, else off',
  },
  'otlp-content': {
    type: 'boolean',
    description: 'with --otlp: record messages, tool arguments and results in the spans',
  },
}

/** Tracing for a command, when `--otlp` or the OpenTelemetry variables ask for it. */
export async function commandTracing(context: CommandContext, serviceName: string): Promise<CliTracing | undefined> {
  const url = otlpTracesUrl(context.values.otlp as string | undefined, context.io.env)
  if (!url) return undefined
  return startTracing({ url, serviceName, captureContent: context.values['otlp-content'] === true })
}

/** Where spans go: `--otlp <url>`, else the standard OpenTelemetry variables; undefined: tracing off. */
export function otlpTracesUrl(flag: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  if (flag) return flag
  if (env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) return env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT
  // The base endpoint gets the signal's path (OpenTelemetry exporter specification).
  return base ? `${base.replace(/\/+$/, '')}/v1/traces` : undefined
}

export interface CliTracing {
  /** The bus behind `withTraceContext`: trace context in every message's headers. */
  bus<B extends Bus>(bus: B): B
  /** Traces the agent's runs. */
  agent(agent: Agent): void
  /** A tool host's tools, each call a span. */
  tools<T extends Tool<any>>(tools: readonly T[]): T[]
  /** A reviewer service's reviewer, each review a span. */
  reviewer(reviewer: Reviewer): Reviewer
  /** An answer service's answerer, each question a span. */
  answerer(answerer: Answerer): Answerer
  /** An MCP server's toolset: a client span per request, its trace context in `params._meta`. */
  mcp(toolset: import('@signalbox/otel').InstrumentableMcp): void
  /** Flushes the spans still buffered and stops the exporter. */
  shutdown(): Promise<void>
}

/**
 * The OpenTelemetry SDK for a CLI process: spans batched to an OTLP/HTTP (JSON) endpoint, an
 * AsyncLocalStorage context manager so trace context follows the work, registered globally.
 * Loaded only when tracing is asked for.
 */
export async function startTracing(options: { url: string; serviceName: string; captureContent?: boolean }): Promise<CliTracing> {
  let parsed: URL
  try {
    parsed = new URL(options.url)
  } catch {
    throw new CliError('BAD_OTLP_URL', `--otlp needs an http(s) URL (e.g. http://localhost:4318/v1/traces), got "${options.url}"`)
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new CliError('BAD_OTLP_URL', `--otlp needs an http(s) URL, got "${options.url}"`)
  const [api, { AsyncLocalStorageContextManager }, { OTLPTraceExporter }, { resourceFromAttributes }, sdk, otel] =
    await Promise.all([
      import('@opentelemetry/api'),
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace-base'),
      import('@signalbox/otel'),
    ])
  const provider = new sdk.BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': process.env.OTEL_SERVICE_NAME ?? options.serviceName }),
    spanProcessors: [new sdk.BatchSpanProcessor(new OTLPTraceExporter({ url: options.url }))],
  })
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  api.trace.setGlobalTracerProvider(provider)
  return {
    bus: (bus) => otel.withTraceContext(bus) as typeof bus,
    agent: (agent) => {
      otel.traceAgent(agent, { tracerProvider: provider, captureContent: options.captureContent ?? false })
    },
    tools: (tools) => otel.traceTools(tools, { tracerProvider: provider, captureContent: options.captureContent ?? false }),
    reviewer: (reviewer) =>
      otel.traceReviewer(reviewer, { tracerProvider: provider, captureContent: options.captureContent ?? false }),
    answerer: (answerer) =>
      otel.traceAnswerer(answerer, { tracerProvider: provider, captureContent: options.captureContent ?? false }),
    mcp: (toolset) => {
      otel.traceMcp(toolset, { tracerProvider: provider, captureContent: options.captureContent ?? false })
    },
    shutdown: () => provider.shutdown(),
  }
}
