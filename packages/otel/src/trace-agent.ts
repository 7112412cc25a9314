import type { Attributes, MeterProvider, TracerProvider } from '@opentelemetry/api'
import type { Agent, AgentEventOf } from '@signalbox/core'
import { agentScopes } from './agent-scopes.ts'
import { AgentSpans, TRACED_EVENT_TYPES } from './agent-spans.ts'
import { GenAIMetrics, isMeterProviderRegistered } from './genai-metrics.ts'
import { serverOf } from './model-spans.ts'
import { activeRunAttributes } from './run-attributes.ts'
import { isTracerProviderRegistered, signalboxTracer } from './tracer-provider.ts'

/** What a run's span is told of the run it traces (its `run.start` event). */
export type TracedRun = AgentEventOf<'run.start'>

export interface TraceAgentOptions {
  /** Default: the globally registered provider. */
  tracerProvider?: TracerProvider
  /** For the GenAI client metrics (token usage, operation duration). Default: the globally registered one. */
  meterProvider?: MeterProvider
  /**
   * Record contents: messages, tool arguments and results, questions, answers, steering text,
   * reviewers' reasons. Off by default (the same privacy default as the inspector).
   */
  captureContent?: boolean
  /**
   * `gen_ai.provider.name` on the run and model call spans and the metrics. Default: the
   * provider's `providerName` (`openai` for `OpenAIProvider`), else `_OTHER`.
   */
  providerName?: string
  /**
   * More attributes for each run's span: the same for every run, or computed from the run (its
   * ids, input, parent; also called for a resumed run). Runs started inside `withRunAttributes`
   * get those too. Kept off the metrics (their attributes stay low-cardinality).
   */
  attributes?: Attributes | ((run: TracedRun) => Attributes | undefined)
}

/** `gen_ai.provider.name` when nobody says who serves the model. */
export const UNKNOWN_PROVIDER = '_OTHER'

/**
 * Traces an agent's runs: a span per run, turn, model call, tool call, hook that ran and wait
 * for a person, with the GenAI semantic conventions, and records the GenAI client metrics. With
 * neither a tracer nor a meter provider registered nothing is attached (the agent builds no
 * events for it) and the returned detach function does nothing. Register the providers (and a
 * context manager, for trace context across the bus) first.
 */
export function traceAgent(agent: Agent<any>, options: TraceAgentOptions = {}): () => void {
  const tracing = isTracerProviderRegistered(options.tracerProvider)
  const measuring = isMeterProviderRegistered(options.meterProvider)
  if (!tracing && !measuring) return () => {}
  const tracer = signalboxTracer(options.tracerProvider)
  const given = options.attributes
  const spans = new AgentSpans({
    tracer,
    model: agent.model,
    providerName: options.providerName ?? agent.provider.providerName ?? UNKNOWN_PROVIDER,
    server: serverOf(agent.provider.baseURL),
    captureContent: options.captureContent ?? false,
    metrics: measuring ? new GenAIMetrics(options.meterProvider) : undefined,
    runAttributes: (run) => {
      const fromContext = activeRunAttributes()
      const fromOption = typeof given === 'function' ? given(run) : given
      return fromContext === undefined ? fromOption : { ...fromOption, ...fromContext }
    },
  })
  const handle = (event: Parameters<typeof spans.handle>[0]) => spans.handle(event)
  const detach = [...TRACED_EVENT_TYPES.map((type) => agent.on(type, handle)), agent.instrument(agentScopes(tracer, spans))]
  let attached = true
  return () => {
    if (!attached) return
    attached = false
    for (const off of detach) off()
    spans.close()
  }
}
