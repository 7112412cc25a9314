import { type Attributes, context, type Span, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api'
import type { HookWork, Instrumentation, InstrumentedWork } from '@signalbox/core'
import { type AgentSpans, recordError } from './agent-spans.ts'
import { ERROR_TYPE, GenAI, Signalbox } from './attributes.ts'
import { carriedContext, openRuns } from './run-spans.ts'

/**
 * Runs a traced agent's tools and reviewer inside their span's context (so what they send over
 * the bus carries it), and each hook in a span of its own.
 */
export function agentScopes(tracer: Tracer, agentSpans: AgentSpans): Instrumentation {
  return {
    around<T>(work: InstrumentedWork, run: () => T): T {
      if (work.kind === 'hook') return traceHook(tracer, agentSpans, work, run)
      if (work.kind === 'resume') {
        // The resumed run's span starts under the context it kept (its parent's, or its first span).
        const kept = carriedContext(work.carried)
        return kept === undefined ? run() : context.with(kept, run)
      }
      const spans = openRuns.get(work.kind === 'tool' ? work.context.runId : work.request.runId)
      if (!spans) return run()
      if (work.kind === 'tool') return context.with(spans.callContext(work.context.callId), run)
      return context.with(trace.setSpan(context.active(), agentSpans.openApproval(spans, work.request)), run)
    },
    carry({ runId }) {
      const carrier = openRuns.get(runId)?.carrier
      return carrier && Object.keys(carrier).length > 0 ? carrier : undefined
    },
  }
}

function traceHook<T>(tracer: Tracer, agentSpans: AgentSpans, work: HookWork, run: () => T): T {
  const { point, context: hook } = work
  const spans = openRuns.get(hook.runId)
  if (!spans) return run()
  if (hook.callId !== undefined && hook.toolName !== undefined) agentSpans.openTool(spans, hook.callId, hook.toolName)
  const parent = hook.callId === undefined ? spans.turnContext(hook.turn) : spans.callContext(hook.callId, hook.turn)
  const span = tracer.startSpan(
    `signalbox.hook ${work.name ?? point}`,
    {
      attributes: {
        [Signalbox.hookPoint]: point,
        [Signalbox.hookIndex]: work.index,
        [Signalbox.turn]: hook.turn,
        ...(work.name ? { [Signalbox.hookName]: work.name } : {}),
        ...(hook.callId ? { [GenAI.toolCallId]: hook.callId } : {}),
        ...(hook.toolName ? { [GenAI.toolName]: hook.toolName } : {}),
      },
    },
    parent,
  )
  let result: T
  try {
    result = context.with(trace.setSpan(parent, span), run)
  } catch (error) {
    endFailed(span, error)
    throw error
  }
  if (isPromise(result)) {
    // Watched on a branch: the caller gets the very same promise (and its rejection).
    result.then(
      (value) => endWith(span, outcomeOf(point, value)),
      (error) => endFailed(span, error),
    )
  } else {
    endWith(span, outcomeOf(point, result))
  }
  return result
}

/** What the hook decided, as attributes: the gate of beforeToolExecution, a stop, a rewrite. */
function outcomeOf(point: HookWork['point'], value: unknown): Attributes {
  const given = value !== undefined && value !== null
  switch (point) {
    case 'beforeToolExecution': {
      if (!given) return { [Signalbox.hookDecision]: 'allow' }
      const gate = value as { action?: string; authorize?: boolean; mockResult?: string }
      if (typeof gate.action === 'string') return { [Signalbox.hookDecision]: gate.action }
      if (gate.authorize === false) return { [Signalbox.hookDecision]: 'deny' }
      return { [Signalbox.hookDecision]: gate.mockResult === undefined ? 'allow' : 'respond' }
    }
    case 'beforeTurn':
      return { [Signalbox.hookDecision]: given ? 'stop' : 'continue' }
    case 'beforeProviderCall':
    case 'afterToolExecution':
      return { [Signalbox.hookRewrote]: given }
    default:
      return {}
  }
}

function endWith(span: Span, attributes: Attributes): void {
  span.setAttributes(attributes)
  span.end()
}

function endFailed(span: Span, error: unknown): void {
  const code = (error as { code?: unknown })?.code
  const message = error instanceof Error ? error.message : String(error)
  if (typeof code === 'string') recordError(span, { code, message })
  else {
    span.setAttribute(ERROR_TYPE, error instanceof Error ? error.name : 'Error')
    span.recordException(error instanceof Error ? error : { message })
    span.setStatus({ code: SpanStatusCode.ERROR, message })
  }
  span.end()
}

function isPromise<T>(value: T): value is T & Promise<Awaited<T>> {
  return value !== null && typeof value === 'object' && typeof (value as { then?: unknown }).then === 'function'
}
