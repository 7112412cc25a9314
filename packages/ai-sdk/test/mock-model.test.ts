/**
 * The adapter against the AI SDK's own mock model (`ai/test`): what the model is sent (prompt,
 * tools, response format, signal), and what the agent makes of its answers, streamed or not.
 */
import { APICallError, type LanguageModelV3CallOptions, type LanguageModelV3StreamPart } from '@ai-sdk/provider'
import { AiSdkProvider } from '@signalbox/ai-sdk'
import { type AgentEvent, ConfigError, createAgent, RunFailedError, tool } from '@signalbox/core'
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'

const usage = (input: number, output: number) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
})

const weather = (calls: unknown[] = []) =>
  tool({
    name: 'weather',
    description: 'The weather in a city.',
    schema: z.object({ city: z.string() }),
    execute: (args) => {
      calls.push(args)
      return `Sunny in ${args.city}`
    },
  })

/** A streamed turn: text in pieces, then tool calls, then the finish with its usage. */
function streamed(parts: {
  text?: string[]
  calls?: { id: string; name: string; input: string }[]
  finish: 'stop' | 'tool-calls'
  tokens: [number, number]
}) {
  const chunks: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: [] }]
  chunks.push({ type: 'response-metadata', id: 'r1', modelId: 'mock-model-v2', timestamp: new Date(0) })
  if (parts.text) {
    chunks.push({ type: 'text-start', id: 't' })
    for (const delta of parts.text) chunks.push({ type: 'text-delta', id: 't', delta })
    chunks.push({ type: 'text-end', id: 't' })
  }
  for (const call of parts.calls ?? []) {
    chunks.push({ type: 'tool-input-start', id: call.id, toolName: call.name })
    chunks.push({ type: 'tool-input-delta', id: call.id, delta: call.input })
    chunks.push({ type: 'tool-input-end', id: call.id })
    chunks.push({ type: 'tool-call', toolCallId: call.id, toolName: call.name, input: call.input })
  }
  chunks.push({ type: 'finish', finishReason: { unified: parts.finish, raw: parts.finish }, usage: usage(...parts.tokens) })
  return { stream: convertArrayToReadableStream(chunks) }
}

function record(agent: { on(type: '*', listener: (event: AgentEvent) => void): unknown }): AgentEvent[] {
  const events: AgentEvent[] = []
  agent.on('*', (event) => events.push(event))
  return events
}

describe('AiSdkProvider on the AI SDK mock model', () => {
  it('streams: text deltas as events, tool calls run, the results go back named, usage summed', async () => {
    const model = new MockLanguageModelV3({
      provider: 'mock.chat',
      modelId: 'mock-model',
      doStream: [
        streamed({
          text: ['Let me ', 'check.'],
          calls: [{ id: 'c1', name: 'weather', input: '{"city":"Paris"}' }],
          finish: 'tool-calls',
          tokens: [20, 8],
        }),
        streamed({ text: ['Sunny ', 'in Paris.'], finish: 'stop', tokens: [40, 4] }),
      ],
    })
    const calls: unknown[] = []
    const agent = createAgent({ provider: new AiSdkProvider(model), tools: [weather(calls)], instructions: 'Be brief.' })
    const events = record(agent)
    const result = await agent.run('Weather in Paris?')

    expect(result.output).toBe('Sunny in Paris.')
    expect(calls).toEqual([{ city: 'Paris' }])
    expect(result.usage).toEqual({ promptTokens: 60, completionTokens: 12, totalTokens: 72 })
    expect(
      events
        .filter((e) => e.type === 'text.delta')
        .map((e) => e.delta)
        .join('|'),
    ).toBe('Let me |check.|Sunny |in Paris.')
    const responses = events.filter((e) => e.type === 'model.response')
    expect(responses.map((e) => e.finishReason)).toEqual(['tool_calls', 'stop'])
    expect(result.messages[2]).toEqual({
      role: 'assistant',
      content: 'Let me check.',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
    })

    const [first, second] = model.doStreamCalls as LanguageModelV3CallOptions[]
    expect(first?.tools).toEqual([
      {
        type: 'function',
        name: 'weather',
        description: 'The weather in a city.',
        inputSchema: expect.objectContaining({ type: 'object', required: ['city'] }),
      },
    ])
    expect(first?.toolChoice).toEqual({ type: 'auto' })
    expect(first?.responseFormat).toBeUndefined()
    expect(first?.abortSignal).toBeInstanceOf(AbortSignal)
    expect(second?.prompt).toEqual([
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Let me check.' },
          { type: 'tool-call', toolCallId: 'c1', toolName: 'weather', input: { city: 'Paris' } },
        ],
      },
      {
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: 'c1', toolName: 'weather', output: { type: 'text', value: 'Sunny in Paris' } },
        ],
      },
    ])
  })

  it('stream: false calls doGenerate; several tool results of one turn go back as one tool message', async () => {
    const model = new MockLanguageModelV3({
      doGenerate: [
        {
          content: [
            { type: 'tool-call', toolCallId: 'a', toolName: 'weather', input: '{"city":"Lyon"}' },
            { type: 'tool-call', toolCallId: 'b', toolName: 'weather', input: '{"city":"Nice"}' },
          ],
          finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
          usage: usage(10, 5),
          warnings: [],
        },
        {
          content: [
            { type: 'reasoning', text: 'both sunny' },
            { type: 'text', text: 'Sunny in both.' },
          ],
          finishReason: { unified: 'stop', raw: 'stop' },
          usage: usage(30, 3),
          warnings: [],
          response: { modelId: 'mock-2025' },
        },
      ],
    })
    const agent = createAgent({ provider: new AiSdkProvider(model, { stream: false }), tools: [weather()] })
    const events = record(agent)
    const result = await agent.run('Lyon and Nice?')
    expect(result.output).toBe('Sunny in both.')
    expect(result.usage.totalTokens).toBe(48)
    expect(model.doStreamCalls).toHaveLength(0)
    expect(events.filter((e) => e.type === 'model.response').map((e) => e.finishReason)).toEqual(['tool_calls', 'stop'])
    expect(model.doGenerateCalls[1]?.prompt.at(-1)).toEqual({
      role: 'tool',
      content: [
        { type: 'tool-result', toolCallId: 'a', toolName: 'weather', output: { type: 'text', value: 'Sunny in Lyon' } },
        { type: 'tool-result', toolCallId: 'b', toolName: 'weather', output: { type: 'text', value: 'Sunny in Nice' } },
      ],
    })
  })

  it('structured output: the schema goes as a JSON response format, the answer comes back parsed and typed', async () => {
    const model = new MockLanguageModelV3({
      doStream: [
        streamed({ text: ['{"city":"Paris",', '"sunny":"yes"}'], finish: 'stop', tokens: [5, 5] }),
        streamed({ text: ['{"city":"Paris","sunny":true}'], finish: 'stop', tokens: [9, 5] }),
      ],
    })
    const agent = createAgent({ provider: new AiSdkProvider(model), output: z.object({ city: z.string(), sunny: z.boolean() }) })
    const result = await agent.run('Is it sunny in Paris?')
    expectTypeOf(result.output).toEqualTypeOf<{ city: string; sunny: boolean }>()
    expect(result.output).toEqual({ city: 'Paris', sunny: true })
    expect(model.doStreamCalls[0]?.responseFormat).toEqual({
      type: 'json',
      name: 'output',
      schema: {
        type: 'object',
        properties: { city: { type: 'string' }, sunny: { type: 'boolean' } },
        required: ['city', 'sunny'],
        additionalProperties: false,
      },
    })
    // The first answer failed the schema: the model read why.
    expect(JSON.stringify(model.doStreamCalls[1]?.prompt.at(-1))).toMatch(/sunny: /)
  })

  it('settings and provider options go with every call; warnings reach onWarning', async () => {
    const warnings: unknown[] = []
    const model = new MockLanguageModelV3({
      doStream: async () => ({
        stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([
          { type: 'stream-start', warnings: [{ type: 'unsupported', feature: 'topK' }] },
          { type: 'text-delta', id: 't', delta: 'ok' },
          { type: 'finish', finishReason: { unified: 'stop', raw: undefined }, usage: usage(1, 1) },
        ]),
      }),
    })
    const provider = new AiSdkProvider(model, {
      settings: { temperature: 0.2, maxOutputTokens: 100, topK: 3, providerOptions: { mock: { cache: true } } },
      onWarning: (warning) => warnings.push(warning),
    })
    await createAgent({ provider }).run('hi')
    expect(model.doStreamCalls[0]).toMatchObject({
      temperature: 0.2,
      maxOutputTokens: 100,
      topK: 3,
      providerOptions: { mock: { cache: true } },
    })
    expect(warnings).toEqual([{ type: 'unsupported', feature: 'topK' }])
  })

  it('a 429 with retry-after is retried under the agent policy as PROVIDER_RATE_LIMITED; a 401 fails as PROVIDER_AUTH', async () => {
    const apiError = (statusCode: number, retry: boolean) =>
      new APICallError({
        message: statusCode === 429 ? 'Too many requests' : 'Invalid key',
        url: 'https://api.example.test/v1/chat',
        requestBodyValues: {},
        statusCode,
        responseHeaders: statusCode === 429 ? { 'retry-after-ms': '5' } : {},
        responseBody: '{"error":"nope"}',
        isRetryable: retry,
      })
    let calls = 0
    const model = new MockLanguageModelV3({
      doStream: async () => {
        calls++
        if (calls === 1) throw apiError(429, true)
        if (calls === 2) return streamed({ text: ['fine'], finish: 'stop', tokens: [1, 1] })
        throw apiError(401, false)
      },
    })
    const agent = createAgent({ provider: new AiSdkProvider(model), retry: { baseDelayMs: 1, maxDelayMs: 5 } })
    const events = record(agent)
    expect((await agent.run('hi')).output).toBe('fine')
    const retry = events.find((e) => e.type === 'model.retry')
    expect(retry?.type === 'model.retry' && retry.error).toMatchObject({
      code: 'PROVIDER_RATE_LIMITED',
      details: { retryAfterMs: 5 },
    })

    const failed = await agent.run('again').catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(RunFailedError)
    expect(failed).toMatchObject({ code: 'PROVIDER_AUTH' })
    expect((failed as Error).message).toMatch(
      /^The model endpoint https:\/\/api\.example\.test\/v1\/chat \(mock-provider model "mock-model-id"\) refused the request \(401\)/,
    )
  })

  it("a stream's error part fails the call; a stream that ends without finishing is retried", async () => {
    let calls = 0
    const model = new MockLanguageModelV3({
      doStream: async () => {
        calls++
        if (calls === 1)
          return {
            stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([{ type: 'text-delta', id: 't', delta: 'Hal' }]),
          }
        if (calls === 2) return streamed({ text: ['Hello'], finish: 'stop', tokens: [1, 1] })
        return {
          stream: convertArrayToReadableStream<LanguageModelV3StreamPart>([{ type: 'error', error: new Error('overloaded') }]),
        }
      },
    })
    const agent = createAgent({ provider: new AiSdkProvider(model), retry: { baseDelayMs: 1, maxDelayMs: 5, maxAttempts: 2 } })
    const events = record(agent)
    expect((await agent.run('hi')).output).toBe('Hello')
    expect(events.find((e) => e.type === 'model.retry')).toMatchObject({ error: { code: 'PROVIDER_UNREACHABLE' } })
    const failed = await agent.run('again').catch((e: unknown) => e)
    expect(failed).toMatchObject({ code: 'PROVIDER_ERROR' })
    expect((failed as Error).message).toContain('overloaded')
  })

  it('a cancelled run aborts the signal the model was given', async () => {
    let seen: AbortSignal | undefined
    const model = new MockLanguageModelV3({
      doStream: (options) => {
        seen = options.abortSignal
        return new Promise((_, reject) => {
          options.abortSignal?.addEventListener('abort', () =>
            reject(Object.assign(new Error('aborted'), { name: 'AbortError' })),
          )
        })
      },
    })
    const handle = createAgent({ provider: new AiSdkProvider(model) }).start('hi')
    while (!seen) await new Promise<void>((resolve) => setImmediate(resolve))
    handle.cancel()
    await expect(handle.result).rejects.toMatchObject({ code: 'RUN_CANCELLED' })
    expect(seen.aborted).toBe(true)
  })

  it('takes only specification v3 models, saying what to upgrade', () => {
    expect(() => new AiSdkProvider({ specificationVersion: 'v2', provider: 'old', modelId: 'm' } as never)).toThrow(ConfigError)
    expect(() => new AiSdkProvider({ specificationVersion: 'v2' } as never)).toThrow(
      /specification v2: upgrade its provider package/,
    )
  })
})
