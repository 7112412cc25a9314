/**
 * The OpenTelemetry GenAI conventions, end to end: the real OpenAIProvider over HTTP against the
 * scripted model server, spans exported with the real OTLP/HTTP exporter to the suite's receiver,
 * and the GenAI client metrics read through a real metrics SDK reader.
 */
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { AggregationTemporality, type DataPoint, type Histogram, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { createAgent, OpenAIProvider, tool } from '@signalbox/core'
import type { ScriptStep } from '@signalbox/core/testing'
import { traceAgent, withRunAttributes } from '@signalbox/otel'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { scriptedModel } from '../e2e/support/scripted.ts'
import { type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.ts'

/** A pull reader: the test collects when it wants to look. */
class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE })
  }
  protected async onForceFlush(): Promise<void> {}
  protected async onShutdown(): Promise<void> {}
}

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

async function telemetry() {
  const receiver = await startOtlpReceiver()
  closers.push(receiver.close)
  const tracerProvider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'genai-conventions' }),
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: receiver.url }))],
  })
  const reader = new TestReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  closers.push(async () => {
    await tracerProvider.shutdown()
    await meterProvider.shutdown()
  })
  return {
    tracerProvider,
    meterProvider,
    /** Every span exported so far, once the exporter has sent them. */
    async spans(): Promise<ReceivedSpan[]> {
      await tracerProvider.forceFlush()
      return receiver.spans
    },
    async histogram(name: string): Promise<DataPoint<Histogram>[]> {
      const { resourceMetrics } = await reader.collect()
      const metric = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)
      return (metric?.dataPoints ?? []) as DataPoint<Histogram>[]
    },
  }
}

const lookUp = tool({
  name: 'look_up',
  description: 'Looks a train up.',
  schema: z.object({ train: z.string() }),
  execute: ({ train }) => `${train} leaves at 9:12`,
})

/** One failed attempt (retried), a tool call, the answer: 100 input and 16 output tokens in all. */
const OVERLOADED_THEN_ANSWERED: ScriptStep[] = [
  { error: { status: 503, message: 'overloaded' }, headers: { 'retry-after-ms': '0' } },
  {
    toolCalls: [{ id: 'c1', name: 'look_up', arguments: { train: 'IC 512' } }],
    usage: { promptTokens: 40, completionTokens: 7 },
  },
  { content: 'It leaves at 9:12.', usage: { promptTokens: 60, completionTokens: 9 } },
]

function only(spans: ReceivedSpan[], name: string): ReceivedSpan[] {
  return spans.filter((span) => span.name === name)
}

describe('traceAgent: the GenAI semantic conventions', () => {
  it('puts the provider, the response and the server on the chat and invoke_agent spans, per-run attributes on the run', async () => {
    const t = await telemetry()
    const { server, provider } = await scriptedModel({ 'gpt-test': OVERLOADED_THEN_ANSWERED })
    const agent = createAgent({
      id: 'trains',
      provider: provider('gpt-test'),
      tools: [lookUp],
      retry: { baseDelayMs: 1, maxDelayMs: 1 },
    })
    traceAgent(agent, {
      tracerProvider: t.tracerProvider,
      meterProvider: t.meterProvider,
      attributes: (run) => ({ 'app.input_length': run.input.length }),
    })
    const result = await withRunAttributes({ 'user.id': 'tina' }, () => agent.run('When does the IC 512 leave?'))
    expect(result.output).toBe('It leaves at 9:12.')
    server.assertDone()

    const spans = await t.spans()
    const port = Number(new URL(server.url).port)
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['genai-conventions']))
    const chats = only(spans, 'chat gpt-test')
    expect(chats).toHaveLength(3)
    const [failed, first, second] = chats as [ReceivedSpan, ReceivedSpan, ReceivedSpan]
    for (const chat of chats) {
      expect(chat.kind).toBe(3) // CLIENT
      expect(chat.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'gpt-test',
        'server.address': '127.0.0.1',
        'server.port': port,
      })
    }
    expect(failed.attributes['error.type']).toBe('PROVIDER_UNAVAILABLE')
    expect(failed.attributes['gen_ai.response.id']).toBeUndefined()
    expect(first.attributes).toMatchObject({
      'gen_ai.response.model': 'gpt-test',
      'gen_ai.response.id': expect.stringMatching(/^chatcmpl-/),
      'gen_ai.response.finish_reasons': ['tool_calls'],
      'gen_ai.usage.input_tokens': 40,
      'gen_ai.usage.output_tokens': 7,
    })
    expect(second.attributes['gen_ai.response.id']).not.toBe(first.attributes['gen_ai.response.id'])

    const [run] = only(spans, 'invoke_agent trains') as [ReceivedSpan]
    expect(run.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.provider.name': 'openai',
      'gen_ai.agent.name': 'trains',
      'gen_ai.conversation.id': result.runId,
      'gen_ai.request.model': 'gpt-test',
      'gen_ai.response.model': 'gpt-test',
      'gen_ai.response.id': second.attributes['gen_ai.response.id'],
      'gen_ai.response.finish_reasons': ['stop'],
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': 16,
      'server.address': '127.0.0.1',
      'server.port': port,
      'app.input_length': 'When does the IC 512 leave?'.length,
      'user.id': 'tina',
    })
    // Per-run attributes stay on the run: the model calls and the metrics keep low cardinality.
    expect(first.attributes['user.id']).toBeUndefined()
  })

  it('records gen_ai.client.token.usage by token type and gen_ai.client.operation.duration, failed attempts with error.type', async () => {
    const t = await telemetry()
    const { server, provider } = await scriptedModel({ 'gpt-test': OVERLOADED_THEN_ANSWERED })
    const agent = createAgent({ provider: provider('gpt-test'), tools: [lookUp], retry: { baseDelayMs: 1, maxDelayMs: 1 } })
    // Metrics alone: no tracer provider anywhere.
    traceAgent(agent, { meterProvider: t.meterProvider })
    await withRunAttributes({ 'user.id': 'tina' }, () => agent.run('When?'))
    server.assertDone()

    const port = Number(new URL(server.url).port)
    const common = {
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-test',
      'server.address': '127.0.0.1',
      'server.port': port,
    }
    const tokens = await t.histogram('gen_ai.client.token.usage')
    expect(tokens.map((p) => [p.attributes, p.value.count, p.value.sum])).toEqual(
      expect.arrayContaining([
        [{ ...common, 'gen_ai.response.model': 'gpt-test', 'gen_ai.token.type': 'input' }, 2, 100],
        [{ ...common, 'gen_ai.response.model': 'gpt-test', 'gen_ai.token.type': 'output' }, 2, 16],
      ]),
    )
    expect(tokens).toHaveLength(2)
    const durations = await t.histogram('gen_ai.client.operation.duration')
    expect(durations.map((p) => [p.attributes, p.value.count])).toEqual(
      expect.arrayContaining([
        [{ ...common, 'gen_ai.response.model': 'gpt-test' }, 2],
        [{ ...common, 'error.type': 'PROVIDER_UNAVAILABLE' }, 1],
      ]),
    )
    expect(durations).toHaveLength(2)
    for (const point of durations) expect(point.value.sum).toBeGreaterThan(0)
    // The conventions' bucket boundaries (seconds).
    expect(durations[0]?.value.buckets.boundaries).toEqual([
      0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ])
  })

  it('names the provider as told (providerName), and as the provider says (OpenAIProvider({ providerName }))', async () => {
    const t = await telemetry()
    const { provider } = await scriptedModel({ '*': [{ content: 'one' }, { content: 'two' }] })
    const named = createAgent({ id: 'named', provider: provider('m') })
    traceAgent(named, { tracerProvider: t.tracerProvider, meterProvider: t.meterProvider, providerName: 'azure.ai.openai' })
    await named.run('hi')
    const { server } = await scriptedModel({ '*': [{ content: 'three' }] })
    const ollama = createAgent({
      id: 'local',
      provider: new OpenAIProvider({ baseURL: server.url, model: 'llama3.1', providerName: 'ollama' }),
    })
    traceAgent(ollama, { tracerProvider: t.tracerProvider })
    await ollama.run('hi')
    const spans = await t.spans()
    expect(only(spans, 'invoke_agent named')[0]?.attributes['gen_ai.provider.name']).toBe('azure.ai.openai')
    expect(only(spans, 'chat m')[0]?.attributes['gen_ai.provider.name']).toBe('azure.ai.openai')
    expect(only(spans, 'chat llama3.1')[0]?.attributes['gen_ai.provider.name']).toBe('ollama')
    const durations = await t.histogram('gen_ai.client.operation.duration')
    expect(durations.map((p) => p.attributes['gen_ai.provider.name'])).toEqual(['azure.ai.openai'])
  })
})
