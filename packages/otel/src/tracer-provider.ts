import { ProxyTracerProvider, type Tracer, type TracerProvider, trace } from '@opentelemetry/api'
import { TRACER_NAME, TRACER_VERSION } from './attributes.ts'

/** The no-op provider the API falls back to while none is registered (a module singleton). */
const NOOP_DELEGATE = new ProxyTracerProvider().getDelegate()

/**
 * Whether spans would go anywhere: a provider was passed, or one is registered globally.
 * Checked once when tracing is attached, so an untraced agent gets no listeners (and builds no events).
 */
export function isTracerProviderRegistered(provider: TracerProvider = trace.getTracerProvider()): boolean {
  if (provider instanceof ProxyTracerProvider) return provider.getDelegate() !== NOOP_DELEGATE
  return true
}

export function signalboxTracer(provider?: TracerProvider): Tracer {
  return (provider ?? trace.getTracerProvider()).getTracer(TRACER_NAME, TRACER_VERSION)
}
