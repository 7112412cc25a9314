import type { TracerProvider } from '@opentelemetry/api'
import type { Agent } from '@signalbox/core'
import { agentScopes } from './agent-scopes.ts'
import { AgentSpans, TRACED_EVENT_TYPES } from './agent-spans.ts'
import { isTracerProviderRegistered, signalboxTracer } from './tracer-provider.ts'

export interface TraceAgentOptions {
  /** Default: the globally registered provider. */
  tracerProvider?: TracerProvider
  /**
   * Record contents: messages, tool arguments and results, questions, answers, steering text,
   * reviewers' reasons. Off by default (the same privacy default as the inspector).
   */
  captureContent?: boolean
}

/**
 * Traces an agent's runs: a span per run, turn, model call, tool call, hook that ran and wait
 * for a person, with the GenAI semantic conventions. With no tracer provider registered nothing
 * is attached (the agent builds no events for it) and the returned detach function does nothing.
 * Register the provider (and a context manager, for trace context across the bus) first.
 */
export function traceAgent(agent: Agent, options: TraceAgentOptions = {}): () => void {
  if (!isTracerProviderRegistered(options.tracerProvider)) return () => {}
  const tracer = signalboxTracer(options.tracerProvider)
  const spans = new AgentSpans({ tracer, model: agent.model, captureContent: options.captureContent ?? false })
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
