import {
  type Attributes,
  type Context,
  context,
  isSpanContextValid,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api'
import {
  AGENT_EVENT_TYPES,
  type AgentEvent,
  type AgentEventOf,
  type AgentEventType,
  type ApprovalRequest,
  type SerializedError,
  type ToolOutcome,
} from '@signalbox/core'
import { ERROR_TYPE, GenAI, Operation, Signalbox } from './attributes.ts'
import { openRuns, RunSpans } from './run-spans.ts'

/** The events that open, change or close a span: all of them but `text.delta`, which is per token. */
export const TRACED_EVENT_TYPES: readonly Exclude<AgentEventType, 'text.delta'>[] = AGENT_EVENT_TYPES.filter(
  (type): type is Exclude<AgentEventType, 'text.delta'> => type !== 'text.delta',
)

/**
 * Tool outcomes that are failures (a denial or a steered call is an expected outcome, not an
 * error; a call nobody could even be asked about is: no reviewer configured, or it failed).
 */
const FAILED_OUTCOMES: ReadonlySet<ToolOutcome> = new Set([
  'failed',
  'timeout',
  'invalid_arguments',
  'unknown_tool',
  'approval_unavailable',
])

export interface AgentSpansOptions {
  tracer: Tracer
  /** The model the agent calls (`gen_ai.request.model`). */
  model: string | undefined
  /** Record messages, arguments, results, questions, answers and steering text. */
  captureContent: boolean
}

/** Turns an agent's observe-only events into spans: run > turn > model call / tool call > wait for a person. */
export class AgentSpans {
  readonly #tracer: Tracer
  readonly #model: string | undefined
  readonly #content: boolean
  /** Runs this agent opened (closed by `run.end`). */
  readonly #mine = new Set<string>()

  constructor(options: AgentSpansOptions) {
    this.#tracer = options.tracer
    this.#model = options.model
    this.#content = options.captureContent
  }

  handle(event: AgentEvent): void {
    if (event.type === 'run.start') {
      this.#runStart(event)
      return
    }
    const run = openRuns.get(event.runId)
    if (!run || !this.#mine.has(event.runId)) return
    switch (event.type) {
      case 'run.end':
        this.#runEnd(run, event)
        return
      case 'run.error':
        // Emitted just before run.end, which carries the same error: recorded once, there.
        run.error ??= event.error
        return
      case 'turn.start': {
        const span = this.#start(`signalbox.turn ${event.turn}`, run.context, { [Signalbox.turn]: event.turn })
        run.openTurn(event.turn, span)
        return
      }
      case 'turn.end': {
        const span = run.turns.get(event.turn)
        run.turns.delete(event.turn)
        span?.setAttribute(Signalbox.turnToolCalls, event.toolCalls)
        span?.end()
        return
      }
      case 'model.request':
        this.#modelRequest(run, event)
        return
      case 'model.response':
        this.#modelResponse(run, event)
        return
      case 'model.retry': {
        const span = run.model
        run.model = undefined
        if (!span) return
        span.setAttribute(Signalbox.modelRetryDelayMs, event.delayMs)
        recordError(span, event.error)
        span.end()
        return
      }
      case 'tool.start': {
        const span = this.openTool(run, event.callId, event.toolName)
        if (this.#content) span.setAttribute(GenAI.toolCallArguments, json(event.arguments))
        return
      }
      case 'tool.end':
        this.#toolEnd(run, event)
        return
      case 'approval.requested': {
        this.openApproval(run, event.request)
        return
      }
      case 'approval.decided':
        this.#endApproval(run, event.request.requestId, {
          [Signalbox.approvalDecision]: event.decision.approved ? 'approved' : 'denied',
          [Signalbox.approvalReviewer]: event.decision.reviewer,
          [Signalbox.latencyMs]: event.latencyMs,
          ...(this.#content && event.decision.reason ? { [Signalbox.approvalReason]: event.decision.reason } : {}),
        })
        return
      case 'approval.timeout':
        this.#endApproval(run, event.request.requestId, { [Signalbox.approvalDecision]: 'timeout' })
        return
      case 'approval.unavailable':
        this.#endApproval(run, event.request.requestId, {
          [Signalbox.approvalDecision]: 'unavailable',
          [Signalbox.approvalReason]: event.reason,
        })
        return
      case 'approval.rejected': {
        // A decision that does not fit the request (forged, stale): the wait goes on.
        const span = event.request ? run.approvals.get(event.request.requestId) : undefined
        ;(span ?? run.run).addEvent('signalbox.approval.rejected', { [Signalbox.approvalReason]: event.reason })
        return
      }
      case 'steering.queued':
        run.run.addEvent('signalbox.steering.queued', {
          [Signalbox.steeringFrom]: event.from,
          ...(this.#content ? { [Signalbox.steeringText]: event.text } : {}),
        })
        return
      case 'steering.applied': {
        const span = this.openTool(run, event.callId, event.toolName)
        span.addEvent('signalbox.steering.applied', {
          [Signalbox.steeringFrom]: event.from,
          [GenAI.toolCallId]: event.callId,
          ...(this.#content ? { [Signalbox.steeringText]: event.text } : {}),
        })
        return
      }
      case 'question.asked': {
        const { question } = event
        const span = this.#start('signalbox.question', run.callContext(question.callId), {
          [Signalbox.questionId]: question.questionId,
          [GenAI.toolCallId]: question.callId,
          ...(this.#content ? { [Signalbox.questionText]: question.question } : {}),
        })
        run.questions.set(question.questionId, span)
        return
      }
      case 'question.answered':
        this.#endQuestion(run, event.question.questionId, {
          [Signalbox.questionOutcome]: 'answered',
          [Signalbox.answeredBy]: event.answeredBy,
          [Signalbox.latencyMs]: event.latencyMs,
          ...(this.#content ? { [Signalbox.answer]: event.answer } : {}),
        })
        return
      case 'question.timeout':
        this.#endQuestion(run, event.question.questionId, { [Signalbox.questionOutcome]: 'timeout' })
        return
    }
  }

  /**
   * The wait for a person, opened when the request is stored (`Reviewer.open`, which runs in its
   * context so the stored request carries it) or at `approval.requested`, whichever comes first.
   */
  openApproval(run: RunSpans, request: ApprovalRequest): Span {
    const open = run.approvals.get(request.requestId)
    if (open) return open
    this.openTool(run, request.callId, request.toolName)
    const span = this.#start(`signalbox.approval ${request.toolName}`, run.callContext(request.callId), {
      [Signalbox.approvalRequestId]: request.requestId,
      [GenAI.toolName]: request.toolName,
      [GenAI.toolCallId]: request.callId,
      ...(this.#content ? { [GenAI.toolCallArguments]: json(request.arguments) } : {}),
    })
    run.approvals.set(request.requestId, span)
    return span
  }

  /**
   * The tool call's span, opened at the first sign of the call: its first hook, its approval
   * request or its start (a call a hook denies never starts, yet it is a tool call).
   */
  openTool(run: RunSpans, callId: string, toolName: string, startTime?: number): Span {
    const open = run.tools.get(callId)
    if (open) return open
    const span = this.#tracer.startSpan(
      `${Operation.executeTool} ${toolName}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [GenAI.operationName]: Operation.executeTool,
          [GenAI.toolName]: toolName,
          [GenAI.toolType]: 'function',
          [GenAI.toolCallId]: callId,
        },
        ...(startTime === undefined ? {} : { startTime }),
      },
      run.turnContext(),
    )
    run.tools.set(callId, span)
    return span
  }

  /** Ends what is still open (the tracing is detached while runs are in flight). */
  close(): void {
    for (const runId of this.#mine) {
      const run = openRuns.get(runId)
      if (!run) continue
      for (const span of run.openChildren()) span.end()
      run.run.end()
      openRuns.delete(runId)
    }
    this.#mine.clear()
  }

  #runStart(event: AgentEventOf<'run.start'>): void {
    // A span active now (the tool that delegated in this process, or the context a run host
    // extracted from the request's headers) is the parent; else the parent run, if it is traced here.
    const active = context.active()
    const activeSpan = trace.getSpan(active)
    const parent =
      (activeSpan && isSpanContextValid(activeSpan.spanContext())) || event.parentRunId === undefined
        ? active
        : (openRuns.get(event.parentRunId)?.context ?? active)
    const span = this.#tracer.startSpan(
      `${Operation.invokeAgent} ${event.agentId}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          [GenAI.operationName]: Operation.invokeAgent,
          [GenAI.agentId]: event.agentId,
          [GenAI.agentName]: event.agentId,
          [GenAI.conversationId]: event.runId,
          ...(this.#model ? { [GenAI.requestModel]: this.#model } : {}),
          [Signalbox.agentId]: event.agentId,
          [Signalbox.runId]: event.runId,
          [Signalbox.runPath]: event.runPath,
          ...(event.agentPath ? { [Signalbox.agentPath]: event.agentPath } : {}),
          ...(event.parentRunId ? { [Signalbox.parentRunId]: event.parentRunId } : {}),
          ...(this.#content ? { [Signalbox.runInput]: event.input } : {}),
        },
      },
      parent,
    )
    openRuns.set(event.runId, new RunSpans(span))
    this.#mine.add(event.runId)
  }

  #runEnd(run: RunSpans, event: AgentEventOf<'run.end'>): void {
    for (const span of run.openChildren()) span.end()
    const span = run.run
    span.setAttributes({
      [Signalbox.runStatus]: event.status,
      [Signalbox.runTurns]: event.turns,
      [GenAI.inputTokens]: event.usage.promptTokens,
      [GenAI.outputTokens]: event.usage.completionTokens,
      ...(this.#content && event.output !== undefined ? { [Signalbox.runOutput]: event.output } : {}),
    })
    const error = event.error ?? run.error
    if (error) recordError(span, error, event.status === 'failed')
    span.end()
    openRuns.delete(event.runId)
    this.#mine.delete(event.runId)
  }

  #modelRequest(run: RunSpans, event: AgentEventOf<'model.request'>): void {
    run.model?.end()
    const name = this.#model ? `${Operation.chat} ${this.#model}` : Operation.chat
    run.model = this.#start(
      name,
      run.turnContext(event.turn),
      {
        [GenAI.operationName]: Operation.chat,
        ...(this.#model ? { [GenAI.requestModel]: this.#model } : {}),
        [Signalbox.turn]: event.turn,
        [Signalbox.modelAttempt]: event.attempt,
        ...(this.#content ? { [GenAI.inputMessages]: json(event.messages) } : {}),
      },
      SpanKind.CLIENT,
    )
  }

  #modelResponse(run: RunSpans, event: AgentEventOf<'model.response'>): void {
    const span = run.model
    run.model = undefined
    if (!span) return
    span.setAttributes({
      [GenAI.responseFinishReasons]: [event.finishReason],
      [Signalbox.latencyMs]: event.durationMs,
      ...(event.usage
        ? { [GenAI.inputTokens]: event.usage.promptTokens, [GenAI.outputTokens]: event.usage.completionTokens }
        : {}),
      ...(this.#content ? { [GenAI.outputMessages]: json([event.message]) } : {}),
    })
    span.end()
  }

  #toolEnd(run: RunSpans, event: AgentEventOf<'tool.end'>): void {
    // A call refused before anything ran (invalid arguments, unknown tool) gets its span here.
    const span = run.tools.get(event.callId) ?? this.openTool(run, event.callId, event.toolName, Date.now() - event.durationMs)
    run.tools.delete(event.callId)
    span.setAttributes({
      [Signalbox.toolOutcome]: event.outcome,
      [Signalbox.latencyMs]: event.durationMs,
      ...(this.#content ? { [GenAI.toolCallResult]: event.output } : {}),
    })
    if (FAILED_OUTCOMES.has(event.outcome)) {
      span.setAttribute(ERROR_TYPE, event.outcome)
      span.setStatus({ code: SpanStatusCode.ERROR, message: `tool call ${event.outcome}` })
    }
    span.end()
  }

  #endApproval(run: RunSpans, requestId: string, attributes: Attributes): void {
    const span = run.approvals.get(requestId)
    run.approvals.delete(requestId)
    span?.setAttributes(attributes)
    span?.end()
  }

  #endQuestion(run: RunSpans, questionId: string, attributes: Attributes): void {
    const span = run.questions.get(questionId)
    run.questions.delete(questionId)
    span?.setAttributes(attributes)
    span?.end()
  }

  #start(name: string, parent: Context, attributes: Attributes, kind = SpanKind.INTERNAL): Span {
    return this.#tracer.startSpan(name, { kind, attributes }, parent)
  }
}

/** Marks the span failed with signalbox's error `code` (as `error.type`) and the message. */
export function recordError(span: Span, error: SerializedError | { code: string; message: string }, failed = true): void {
  span.setAttributes({ [ERROR_TYPE]: error.code, [Signalbox.errorCode]: error.code })
  span.recordException({ name: error.code, message: error.message })
  if (failed) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message })
}

function json(value: unknown): string {
  try {
    return typeof value === 'string' ? value : (JSON.stringify(value) ?? '')
  } catch {
    return '[unserializable]'
  }
}
