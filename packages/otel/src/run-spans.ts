import { type Context, ROOT_CONTEXT, type Span, trace } from '@opentelemetry/api'

/** The open spans of one run, found by the ids the events carry. */
export class RunSpans {
  readonly run: Span
  readonly context: Context
  readonly turns = new Map<number, Span>()
  /** The model call in flight (one at a time per run). */
  model: Span | undefined
  readonly tools = new Map<string, Span>()
  readonly approvals = new Map<string, Span>()
  readonly questions = new Map<string, Span>()
  /** The run's error, when `run.error` told it before `run.end`. */
  error: { code: string; message: string } | undefined
  #lastTurn: number | undefined

  constructor(run: Span) {
    this.run = run
    this.context = trace.setSpan(ROOT_CONTEXT, run)
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
