import { context, type Span, SpanKind, SpanStatusCode, type TracerProvider, trace } from '@opentelemetry/api'
import type { Answer, Answerer, ApprovalDecision, Reviewer, Tool } from '@signalbox/core'
import { recordError } from './agent-spans.ts'
import { ERROR_TYPE, GenAI, Operation, Signalbox } from './attributes.ts'
import { isTracerProviderRegistered, signalboxTracer } from './tracer-provider.ts'

export interface TracedServiceOptions {
  tracerProvider?: TracerProvider
  /** Record arguments and results (tools) or reasons (reviewers). Off by default. */
  captureContent?: boolean
}

/**
 * A tool host's tools, each call in a span. Hosted behind `withTraceContext(bus)`, the span is a
 * child of the agent's tool-call span on the other side of the bus. Unchanged without a provider.
 */
export function traceTools<T extends Tool<any>>(tools: readonly T[], options: TracedServiceOptions = {}): T[] {
  if (!isTracerProviderRegistered(options.tracerProvider)) return [...tools]
  const tracer = signalboxTracer(options.tracerProvider)
  return tools.map((tool) => {
    const execute = tool.execute
    const traced: T = Object.create(tool)
    traced.execute = (args, toolContext) => {
      const span = tracer.startSpan(`${Operation.executeTool} ${tool.name}`, {
        kind: SpanKind.SERVER,
        attributes: {
          [GenAI.operationName]: Operation.executeTool,
          [GenAI.toolName]: tool.name,
          [GenAI.toolType]: 'function',
          [GenAI.toolCallId]: toolContext.callId,
          [Signalbox.toolHost]: true,
          [Signalbox.agentId]: toolContext.agentId,
          [Signalbox.runId]: toolContext.runId,
          ...(options.captureContent ? { [GenAI.toolCallArguments]: JSON.stringify(args) ?? '' } : {}),
        },
      })
      return settle(
        span,
        () => context.with(trace.setSpan(context.active(), span), () => execute.call(tool, args, toolContext)),
        (output) => {
          if (options.captureContent)
            span.setAttribute(GenAI.toolCallResult, typeof output === 'string' ? output : (JSON.stringify(output) ?? ''))
        },
      )
    }
    return traced
  })
}

/**
 * A reviewer whose every review is a span. Served behind `withTraceContext(bus)`, it is a child
 * of the agent's approval span. Unchanged without a provider.
 */
export function traceReviewer(reviewer: Reviewer, options: TracedServiceOptions = {}): Reviewer {
  if (!isTracerProviderRegistered(options.tracerProvider)) return reviewer
  const tracer = signalboxTracer(options.tracerProvider)
  return {
    // What a reviewer does besides reviewing (storing the request first, finding a decision made
    // while the agent was down) passes through untouched: tracing must not change what is applied.
    ...(reviewer.open ? { open: reviewer.open.bind(reviewer) } : {}),
    ...(reviewer.recover ? { recover: reviewer.recover.bind(reviewer) } : {}),
    ...(reviewer.withdraw ? { withdraw: reviewer.withdraw.bind(reviewer) } : {}),
    review(request, reviewOptions) {
      const span = tracer.startSpan(`signalbox.review ${request.toolName}`, {
        kind: SpanKind.SERVER,
        attributes: {
          [Signalbox.approvalRequestId]: request.requestId,
          [Signalbox.agentId]: request.agentId,
          [Signalbox.runId]: request.runId,
          [GenAI.toolName]: request.toolName,
          [GenAI.toolCallId]: request.callId,
        },
      })
      return settle(
        span,
        () => context.with(trace.setSpan(context.active(), span), () => reviewer.review(request, reviewOptions)),
        (decision: ApprovalDecision) =>
          span.setAttributes({
            [Signalbox.approvalDecision]: decision.approved ? 'approved' : 'denied',
            [Signalbox.approvalReviewer]: decision.reviewer,
            ...(options.captureContent && decision.reason ? { [Signalbox.approvalReason]: decision.reason } : {}),
          }),
      )
    },
  }
}

/**
 * An answer service's answerer, each question a span. Served behind `withTraceContext(bus)`, it is
 * a child of the agent's tool call that asked. Unchanged without a provider.
 */
export function traceAnswerer(answerer: Answerer, options: TracedServiceOptions = {}): Answerer {
  if (!isTracerProviderRegistered(options.tracerProvider)) return answerer
  const tracer = signalboxTracer(options.tracerProvider)
  return {
    ...(answerer.recover ? { recover: answerer.recover.bind(answerer) } : {}),
    answer(question, answerOptions) {
      const span = tracer.startSpan('signalbox.answer', {
        kind: SpanKind.SERVER,
        attributes: {
          [Signalbox.questionId]: question.questionId,
          [Signalbox.agentId]: question.agentId,
          [Signalbox.runId]: question.runId,
          [GenAI.toolCallId]: question.callId,
          ...(options.captureContent ? { [Signalbox.questionText]: question.question } : {}),
        },
      })
      return settle(
        span,
        () => context.with(trace.setSpan(context.active(), span), () => answerer.answer(question, answerOptions)),
        (answer: Answer) =>
          span.setAttributes({
            [Signalbox.answeredBy]: answer.answeredBy,
            ...(options.captureContent ? { [Signalbox.answer]: answer.answer } : {}),
          }),
      )
    },
  }
}

/** Runs `work`, ends `span` when it settles (recording a failure), and returns its result unchanged. */
function settle<T>(span: Span, work: () => T, onValue: (value: Awaited<T>) => void): T {
  const fail = (error: unknown) => {
    const code = (error as { code?: unknown })?.code
    const message = error instanceof Error ? error.message : String(error)
    if (typeof code === 'string') recordError(span, { code, message })
    else {
      span.setAttribute(ERROR_TYPE, error instanceof Error ? error.name : 'Error')
      span.setStatus({ code: SpanStatusCode.ERROR, message })
    }
    span.end()
  }
  const done = (value: Awaited<T>) => {
    try {
      onValue(value)
    } finally {
      span.end()
    }
  }
  let result: T
  try {
    result = work()
  } catch (error) {
    fail(error)
    throw error
  }
  if (result !== null && typeof result === 'object' && typeof (result as { then?: unknown }).then === 'function') {
    ;(result as unknown as Promise<Awaited<T>>).then(done, fail)
  } else {
    done(result as Awaited<T>)
  }
  return result
}
