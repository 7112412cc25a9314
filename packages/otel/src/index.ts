export { TRACED_EVENT_TYPES } from './agent-spans.ts'
export { ERROR_TYPE, GenAI, Mcp, Metric, Operation, Server, Signalbox, TRACER_NAME } from './attributes.ts'
export { isMeterProviderRegistered } from './genai-metrics.ts'
export { withRunAttributes } from './run-attributes.ts'
export { type TraceAgentOptions, type TracedRun, traceAgent, UNKNOWN_PROVIDER } from './trace-agent.ts'
export { type TraceContextBusOptions, withTraceContext } from './trace-context-bus.ts'
export {
  type InstrumentableMcp,
  type McpClientInstrumentation,
  type McpClientWork,
  type TraceMcpOptions,
  traceMcp,
} from './trace-mcp.ts'
export { type TracedServiceOptions, traceAnswerer, traceReviewer, traceTools } from './traced-services.ts'
export { isTracerProviderRegistered } from './tracer-provider.ts'
export { parseTraceparent, TRACEPARENT, TRACESTATE, W3CTraceContext } from './w3c-trace-context.ts'
