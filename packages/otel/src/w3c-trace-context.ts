import {
  type Context,
  createTraceState,
  isSpanContextValid,
  type SpanContext,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
  TraceFlags,
  trace,
} from '@opentelemetry/api'

/** The W3C Trace Context headers (https://www.w3.org/TR/trace-context/), as signalbox sends them. */
export const TRACEPARENT = 'traceparent'
export const TRACESTATE = 'tracestate'

const TRACEPARENT_PATTERN = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/

/**
 * W3C Trace Context on the API alone, so the bus carries the documented headers whatever
 * propagator the process registered (or none).
 */
export class W3CTraceContext implements TextMapPropagator {
  inject(context: Context, carrier: unknown, setter: TextMapSetter): void {
    const span = trace.getSpanContext(context)
    if (!span || !isSpanContextValid(span)) return
    const flags = `0${(span.traceFlags & TraceFlags.SAMPLED).toString(16)}`
    setter.set(carrier, TRACEPARENT, `00-${span.traceId}-${span.spanId}-${flags}`)
    const state = span.traceState?.serialize()
    if (state) setter.set(carrier, TRACESTATE, state)
  }

  extract(context: Context, carrier: unknown, getter: TextMapGetter): Context {
    const parent = parseTraceparent(first(getter.get(carrier, TRACEPARENT)))
    if (!parent) return context
    const state = first(getter.get(carrier, TRACESTATE))
    if (state) parent.traceState = createTraceState(state)
    return trace.setSpanContext(context, parent)
  }

  fields(): string[] {
    return [TRACEPARENT, TRACESTATE]
  }
}

/** A `traceparent` value as a remote span context, or undefined when it is malformed. */
export function parseTraceparent(value: string | undefined): SpanContext | undefined {
  if (value === undefined) return undefined
  const match = TRACEPARENT_PATTERN.exec(value.trim())
  if (!match) return undefined
  const [, version, traceId, spanId, flags, rest] = match as unknown as [string, string, string, string, string, string?]
  // Version ff is forbidden; version 00 has nothing after the flags.
  if (version === 'ff' || (version === '00' && rest !== undefined)) return undefined
  const span: SpanContext = { traceId, spanId, traceFlags: Number.parseInt(flags, 16), isRemote: true }
  return isSpanContextValid(span) ? span : undefined
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value
}
