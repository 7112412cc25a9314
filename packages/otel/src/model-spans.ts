import { type Attributes, SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api'
import type { AgentEventOf, SerializedError } from '@signalbox/core'
import { ERROR_TYPE, GenAI, Operation, Server, Signalbox } from './attributes.ts'
import type { GenAIMetrics } from './genai-metrics.ts'
import type { RunSpans } from './run-spans.ts'

/** Where a model endpoint is, as `server.address` / `server.port` (the scheme's port when the URL names none). */
export function serverOf(baseURL: string | undefined): Attributes {
  if (baseURL === undefined) return {}
  let url: URL
  try {
    url = new URL(baseURL)
  } catch {
    return {}
  }
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : url.protocol === 'http:' ? 80 : undefined) : Number(url.port)
  // IPv6 literals come bracketed from URL; the convention wants the address itself.
  const address = url.hostname.replace(/^\[(.*)\]$/, '$1')
  return address === '' ? {} : { [Server.address]: address, ...(port === undefined ? {} : { [Server.port]: port }) }
}

export interface ModelCallsOptions {
  tracer: Tracer
  /** The model requested (`gen_ai.request.model`). */
  model: string | undefined
  providerName: string
  /** `server.address` / `server.port` of the endpoint. */
  server: Attributes
  captureContent: boolean
  metrics: GenAIMetrics | undefined
}

/**
 * The model calls of traced runs: a `chat` span per attempt (GenAI conventions: provider, request
 * and response model, response id, finish reasons, usage, server) and the two GenAI metrics.
 */
export class ModelCalls {
  /** What every chat span and metric point carries (low cardinality: no run ids). */
  readonly common: Attributes
  readonly #options: ModelCallsOptions

  constructor(options: ModelCallsOptions) {
    this.#options = options
    this.common = {
      [GenAI.operationName]: Operation.chat,
      [GenAI.providerName]: options.providerName,
      ...(options.model ? { [GenAI.requestModel]: options.model } : {}),
      ...options.server,
    }
  }

  request(run: RunSpans, event: AgentEventOf<'model.request'>): void {
    run.model?.end()
    const { tracer, model, captureContent } = this.#options
    run.model = tracer.startSpan(
      model ? `${Operation.chat} ${model}` : Operation.chat,
      {
        kind: SpanKind.CLIENT,
        attributes: {
          ...this.common,
          [Signalbox.turn]: event.turn,
          [Signalbox.modelAttempt]: event.attempt,
          ...(captureContent ? { [GenAI.inputMessages]: json(event.messages) } : {}),
        },
      },
      run.turnContext(event.turn),
    )
    run.modelStartedAt = performance.now()
  }

  response(run: RunSpans, event: AgentEventOf<'model.response'>): void {
    const span = run.model
    const startedAt = run.modelStartedAt
    run.model = undefined
    run.modelStartedAt = undefined
    run.lastResponse = {
      finishReason: event.finishReason,
      ...(event.model ? { model: event.model } : {}),
      ...(event.responseId ? { id: event.responseId } : {}),
    }
    if (!span) return
    const response: Attributes = event.model ? { [GenAI.responseModel]: event.model } : {}
    span.setAttributes({
      ...response,
      ...(event.responseId ? { [GenAI.responseId]: event.responseId } : {}),
      [GenAI.responseFinishReasons]: [event.finishReason],
      [Signalbox.latencyMs]: event.durationMs,
      ...(event.usage
        ? { [GenAI.inputTokens]: event.usage.promptTokens, [GenAI.outputTokens]: event.usage.completionTokens }
        : {}),
      ...(this.#options.captureContent ? { [GenAI.outputMessages]: json([event.message]) } : {}),
    })
    span.end()
    this.#options.metrics?.record(
      { ...this.common, ...response },
      {
        seconds: secondsSince(startedAt),
        ...(event.usage ? { usage: { input: event.usage.promptTokens, output: event.usage.completionTokens } } : {}),
      },
    )
  }

  /** An attempt that failed and is retried. */
  retry(run: RunSpans, event: AgentEventOf<'model.retry'>): void {
    run.model?.setAttribute(Signalbox.modelRetryDelayMs, event.delayMs)
    this.#failed(run, event.error)
  }

  /** The run ended with a call in flight: it failed with the run's error, or was cut off (cancelled). */
  abandon(run: RunSpans, error: SerializedError | { code: string; message: string } | undefined): void {
    if (run.model) this.#failed(run, error ?? { code: 'cancelled', message: 'the run ended during the call' })
  }

  #failed(run: RunSpans, error: { code: string; message: string }): void {
    const span = run.model
    const startedAt = run.modelStartedAt
    run.model = undefined
    run.modelStartedAt = undefined
    if (!span) return
    span.setAttributes({ [ERROR_TYPE]: error.code, [Signalbox.errorCode]: error.code })
    span.recordException({ name: error.code, message: error.message })
    span.setStatus({ code: SpanStatusCode.ERROR, message: error.message })
    span.end()
    this.#options.metrics?.record(this.common, { seconds: secondsSince(startedAt), errorType: error.code })
  }
}

const secondsSince = (startedAt: number | undefined) =>
  startedAt === undefined ? 0 : Math.max(0, performance.now() - startedAt) / 1000

export function json(value: unknown): string {
  try {
    return typeof value === 'string' ? value : (JSON.stringify(value) ?? '')
  } catch {
    return '[unserializable]'
  }
}
