import { type Context, ROOT_CONTEXT, type Span, trace } from '@opentelemetry/api'
import { W3CTraceContext } from './w3c-trace-context.ts'

const w3c = new W3CTraceContext()
const setter = {
  set: (carrier: Record<string, string>, key: string, value: string) => {
    carrier[key] = value
  },
}
const getter = {
  get: (carrier: Readonly<Record<string, string>>, key: string) => carrier[key],
  keys: (carrier: Readonly<Record<string, string>>) => Object.keys(carrier),
}

/** `traceparent` (and `tracestate`) of a context's span: what a stored run keeps to continue its trace. */
export function traceCarrier(from: Context): Record<string, string> {
  const carrier: Record<string, string> = {}
  w3c.inject(from, carrier, setter)
  return carrier
}

/** The remote span context a stored run kept, as a context to start spans under (undefined: none kept). */
export function carriedContext(carried: Readonly<Record<string, string>>): Context | undefined {
  const extracted = w3c.extract(ROOT_CONTEXT, carried, getter)
  return trace.getSpanContext(extracted) ? extracted : undefined
}

/** The open spans of one run, found by the ids the events carry. */
export class RunSpans {
  readonly run: Span
  readonly context: Context
  readonly turns = new Map<number, Span>()
  /** The model call in flight (one at a time per run), and when it started (`performance.now()`). */
  model: Span | undefined
  modelStartedAt: number | undefined
  /** What the last model reply said of itself (the run span's `gen_ai.response.*`). */
  lastResponse: { finishReason: string; model?: string; id?: string } | undefined
  readonly tools = new Map<string, Span>()
  readonly approvals = new Map<string, Span>()
  readonly questions = new Map<string, Span>()
  /** The question open for each call (a call asks again when an answer was refused). */
  readonly questionOfCall = new Map<string, string>()
  /** The run's error, when `run.error` told it before `run.end`. */
  error: { code: string; message: string } | undefined
  #lastTurn: number | undefined

  /** The trace context a host that resumes this run continues (`Instrumentation.carry`). */
  readonly carrier: Record<string, string>

  constructor(run: Span, carrier: Record<string, string> = {}) {
    this.run = run
    this.context = trace.setSpan(ROOT_CONTEXT, run)
    this.carrier = carrier
  }

  openTurn(turn: number, span: Span): void {
    this.turns.set(turn, span)
    this.#lastTurn = turn
  }

  /** The context of the turn (or the latest one), else the run. */
  turnContext(turn?: number): Context {
    const span = this.turns.get(turn ?? this.#lastTurn ?? -1)
    return span ? trace.setSpan(ROOT_CONTEXT, span) : this.context
  }

  /** The context of the tool call, else the turn's. */
  callContext(callId: string | undefined, turn?: number): Context {
    const span = callId === undefined ? undefined : this.tools.get(callId)
    return span ? trace.setSpan(ROOT_CONTEXT, span) : this.turnContext(turn)
  }

  /** Every span still open under the run, innermost first (ended when the run ends). */
  openChildren(): Span[] {
    return [
      ...this.approvals.values(),
      ...this.questions.values(),
      ...this.tools.values(),
      ...(this.model ? [this.model] : []),
      ...this.turns.values(),
    ]
  }
}

/**
 * Open runs of every traced agent in this process, by run id: a child run started outside any
 * active span (a queued start, a timer) still joins its parent run's span.
 */
export const openRuns = new Map<string, RunSpans>()
