import { type Attributes, createNoopMeter, type Histogram, type MeterProvider, metrics } from '@opentelemetry/api'
import { ERROR_TYPE, GenAI, Metric, TRACER_NAME, TRACER_VERSION } from './attributes.ts'

/** The conventions' bucket boundaries (GenAI metrics semantic conventions). */
const TOKEN_BUCKETS = [1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864]
const DURATION_BUCKETS = [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]

/**
 * Whether metrics would go anywhere: a provider was passed, or one is registered globally (the
 * API's no-op provider hands out the no-op meter).
 */
export function isMeterProviderRegistered(provider: MeterProvider = metrics.getMeterProvider()): boolean {
  return provider.getMeter(TRACER_NAME) !== createNoopMeter()
}

/**
 * The two GenAI client metrics: `gen_ai.client.token.usage` (by `gen_ai.token.type`) and
 * `gen_ai.client.operation.duration` (seconds, with `error.type` when the operation failed).
 * Recorded per model call; the attributes are the call's low-cardinality ones (never run ids).
 */
export class GenAIMetrics {
  readonly #tokens: Histogram
  readonly #duration: Histogram

  constructor(provider: MeterProvider = metrics.getMeterProvider()) {
    const meter = provider.getMeter(TRACER_NAME, TRACER_VERSION)
    this.#tokens = meter.createHistogram(Metric.tokenUsage, {
      unit: '{token}',
      description: 'Number of input and output tokens used.',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    })
    this.#duration = meter.createHistogram(Metric.operationDuration, {
      unit: 's',
      description: 'GenAI operation duration.',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS },
    })
  }

  /** One operation that ended: its duration, its tokens when the endpoint reported them, its error class if it failed. */
  record(
    attributes: Attributes,
    outcome: { seconds: number; usage?: { input: number; output: number } | undefined; errorType?: string | undefined },
  ): void {
    const { seconds, usage, errorType } = outcome
    this.#duration.record(seconds, errorType === undefined ? attributes : { ...attributes, [ERROR_TYPE]: errorType })
    if (usage === undefined) return
    this.#tokens.record(usage.input, { ...attributes, [GenAI.tokenType]: 'input' })
    this.#tokens.record(usage.output, { ...attributes, [GenAI.tokenType]: 'output' })
  }
}
