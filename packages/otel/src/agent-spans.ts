import {
  type Attributes,
  type Context,
  context,
  isSpanContextValid,
  ROOT_CONTEXT,
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
import type { GenAIMetrics } from './genai-metrics.ts'
import { json, ModelCalls } from './model-spans.ts'
import { openRuns, RunSpans, traceCarrier } from './run-spans.ts'

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
  /** `gen_ai.provider.name`. */
  providerName: string
  /** The model endpoint's `server.address` / `server.port`. */
  server: Attributes
  /** Record messages, arguments, results, questions, answers and steering text. */
  captureContent: boolean
  metrics: GenAIMetrics | undefined
  /** More attributes for a run's span, from its start (the user's per-run attributes). */
  runAttributes: (event: AgentEventOf<'run.start'>) => Attributes | undefined
}

/** Turns an agent's observe-only events into spans: run > turn > model call / tool call > wait for a person. */
export class AgentSpans {
  readonly #tracer: Tracer
  readonly #options: AgentSpansOptions
  readonly #content: boolean
  readonly #calls: ModelCalls
  /** Runs this agent opened (closed by `run.end`). */
  readonly #mine = new Set<string>()

  constructor(options: AgentSpansOptions) {
    this.#tracer = options.tracer
    this.#options = options
    this.#content = options.captureContent
    this.#calls = new ModelCalls(options)
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
        this.#calls.request(run, event)
        return
      case 'model.response':
        this.#calls.response(run, event)
        return
      case 'model.retry':
        this.#calls.retry(run, event)
        return
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
        // Asked again for the same call: the person's answer to the last one was refused.
        const earlier = run.questionOfCall.get(question.callId)
        if (earlier !== undefined) this.#endQuestion(run, earlier, { [Signalbox.questionOutcome]: 'rejected' })
        run.questionOfCall.set(question.callId, question.questionId)
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
    // A span active now (the tool that delegated in this process, the context a run host
    // extracted from the request's headers, or the one a resumed run kept) is the parent; else
    // the parent run, if it is traced here.
    const active = context.active()
    const activeSpan = trace.getSpan(active)
    const parented = activeSpan !== undefined && isSpanContextValid(activeSpan.spanContext())
    const parent = parented || event.parentRunId === undefined ? active : (openRuns.get(event.parentRunId)?.context ?? active)
    const { model, providerName, server } = this.#options
    const span = this.#tracer.startSpan(
      `${Operation.invokeAgent} ${event.agentId}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          ...this.#options.runAttributes(event),
          [GenAI.operationName]: Operation.invokeAgent,
          [GenAI.providerName]: providerName,
          [GenAI.agentId]: event.agentId,
          [GenAI.agentName]: event.agentId,
          [GenAI.conversationId]: event.runId,
          ...(model ? { [GenAI.requestModel]: model } : {}),
          ...server,
          [Signalbox.agentId]: event.agentId,
          [Signalbox.runId]: event.runId,
          [Signalbox.runPath]: event.runPath,
          ...(event.agentPath ? { [Signalbox.agentPath]: event.agentPath } : {}),
          ...(event.parentRunId ? { [Signalbox.parentRunId]: event.parentRunId } : {}),
          ...(event.resumed ? { [Signalbox.runResumed]: true } : {}),
          ...(this.#content ? { [Signalbox.runInput]: event.input } : {}),
        },
      },
      parent,
    )
    // What a host that resumes the run continues from: the run's parent, or for a root run its own span.
    const parentSpan = trace.getSpanContext(parent)
    const anchor = parentSpan && isSpanContextValid(parentSpan) ? parent : trace.setSpan(ROOT_CONTEXT, span)
    openRuns.set(event.runId, new RunSpans(span, traceCarrier(anchor)))
    this.#mine.add(event.runId)
  }

  #runEnd(run: RunSpans, event: AgentEventOf<'run.end'>): void {
    const error = event.error ?? run.error
    this.#calls.abandon(run, error)
    for (const span of run.openChildren()) span.end()
    const span = run.run
    const last = run.lastResponse
    span.setAttributes({
      [Signalbox.runStatus]: event.status,
      [Signalbox.runTurns]: event.turns,
      [GenAI.inputTokens]: event.usage.promptTokens,
      [GenAI.outputTokens]: event.usage.completionTokens,
      ...(last?.model ? { [GenAI.responseModel]: last.model } : {}),
      ...(last?.id ? { [GenAI.responseId]: last.id } : {}),
      ...(last ? { [GenAI.responseFinishReasons]: [last.finishReason] } : {}),
      ...(this.#content && event.output !== undefined ? { [Signalbox.runOutput]: event.output } : {}),
    })
    if (error) recordError(span, error, event.status === 'failed')
    span.end()
    openRuns.delete(event.runId)
    this.#mine.delete(event.runId)
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
    for (const [callId, asked] of run.questionOfCall) if (asked === questionId) run.questionOfCall.delete(callId)
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
