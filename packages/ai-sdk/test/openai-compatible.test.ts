/**
 * A real AI SDK provider package (`@ai-sdk/openai-compatible`) over HTTP against the scripted
 * model server: the same agent, tools, streaming and structured output as on `OpenAIProvider`.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { AiSdkProvider } from '@signalbox/ai-sdk'
import { type AgentEvent, createAgent, RunFailedError, tool } from '@signalbox/core'
import { type ScriptedModelServer, type Scripts, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'

const open: { close(): Promise<unknown> }[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})

async function serve(scripts: Scripts): Promise<ScriptedModelServer> {
  const server = await startScriptedModelServer({ scripts })
  open.push(server)
  return server
}

function providerFor(baseURL: string, model: string, stream = true) {
  const compatible = createOpenAICompatible({
    name: 'scripted',
    baseURL,
    apiKey: 'test',
    includeUsage: true,
    supportsStructuredOutputs: true,
  })
  return new AiSdkProvider(compatible.chatModel(model), { stream })
}

const findTrains = (calls: unknown[]) =>
  tool({
    name: 'find_trains',
    description: 'List the trains to a destination.',
    schema: z.object({ to: z.string() }),
    execute: (args) => {
      calls.push(args)
      return 'Train 3 leaves at 9:00'
    },
  })

describe('AiSdkProvider with @ai-sdk/openai-compatible against the scripted model server', () => {
  it.each([true, false])('stream: %s runs tools and answers, with usage', async (stream) => {
    const server = await serve({
      m1: [
        {
          content: 'Looking.',
          toolCalls: [
            { id: 'call_a', name: 'find_trains', arguments: { to: 'Mar del Plata' } },
            { id: 'call_b', name: 'find_trains', arguments: { to: 'Rosario' } },
          ],
          usage: { promptTokens: 30, completionTokens: 12 },
        },
        { content: 'Train 3 leaves at nine.', usage: { promptTokens: 60, completionTokens: 6 } },
      ],
    })
    const calls: unknown[] = []
    const agent = createAgent({ provider: providerFor(server.url, 'm1', stream), tools: [findTrains(calls)] })
    const deltas: string[] = []
    agent.on('text.delta', (event: Extract<AgentEvent, { type: 'text.delta' }>) => deltas.push(event.delta))
    const result = await agent.run('Trains to Mar del Plata and Rosario?')

    expect(result.output).toBe('Train 3 leaves at nine.')
    expect(calls).toEqual([{ to: 'Mar del Plata' }, { to: 'Rosario' }])
    expect(result.usage).toEqual({ promptTokens: 90, completionTokens: 18, totalTokens: 108 })
    if (stream) expect(deltas.join('')).toBe('Looking.Train 3 leaves at nine.')
    else expect(deltas).toEqual([])
    expect(server.requests.map((r) => r.stream)).toEqual([stream, stream])
    expect(server.requests[0]?.tools).toEqual([
      {
        name: 'find_trains',
        description: 'List the trains to a destination.',
        parameters: expect.objectContaining({ required: ['to'] }),
      },
    ])
    // The provider package wrote the transcript back in its wire format: the calls, then their results.
    expect(server.requests[1]?.messages.slice(-3)).toMatchObject([
      {
        role: 'assistant',
        content: 'Looking.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'find_trains', arguments: '{"to":"Mar del Plata"}' } },
          { id: 'call_b', type: 'function', function: { name: 'find_trains', arguments: '{"to":"Rosario"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: 'Train 3 leaves at 9:00' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Train 3 leaves at 9:00' },
    ])
    server.assertDone()
  })

  it('structured output, streamed: a json_schema response format, the answer parsed and typed', async () => {
    const server = await serve({ m1: [{ content: '{"destination":"Mar del Plata","seats":2}' }] })
    const agent = createAgent({
      provider: providerFor(server.url, 'm1'),
      output: z.object({ destination: z.string(), seats: z.number().int() }),
    })
    const result = await agent.run('Two seats to Mar del Plata.')
    expectTypeOf(result.output).toEqualTypeOf<{ destination: string; seats: number }>()
    expect(result.output).toEqual({ destination: 'Mar del Plata', seats: 2 })
    expect((server.requests[0]?.body as Record<string, unknown> | undefined)?.response_format).toMatchObject({
      type: 'json_schema',
      json_schema: {
        name: 'output',
        schema: { type: 'object', required: ['destination', 'seats'], additionalProperties: false },
      },
    })
  })

  it('a 429 is retried and a 401 is PROVIDER_AUTH, as with OpenAIProvider', async () => {
    const server = await serve({
      m1: [
        { error: { status: 429, message: 'slow down' }, headers: { 'retry-after-ms': '1' } },
        { content: 'ok' },
        { error: { status: 401, message: 'bad key' } },
      ],
    })
    const agent = createAgent({ provider: providerFor(server.url, 'm1'), retry: { baseDelayMs: 1, maxDelayMs: 5 } })
    const retries: string[] = []
    agent.on('model.retry', (event: Extract<AgentEvent, { type: 'model.retry' }>) => retries.push(event.error.code))
    expect((await agent.run('hi')).output).toBe('ok')
    expect(retries).toEqual(['PROVIDER_RATE_LIMITED'])
    const failed = await agent.run('again').catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(RunFailedError)
    expect(failed).toMatchObject({ code: 'PROVIDER_AUTH' })
    expect((failed as Error).message).toContain('bad key')
  })

  it.each([true, false])('an endpoint answering 200 with {} (stream: %s) is a PROVIDER_ERROR naming it', async (stream) => {
    const endpoint = createServer((req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'))
    })
    await new Promise<void>((resolve) => endpoint.listen(0, '127.0.0.1', resolve))
    open.push({ close: () => new Promise<void>((resolve) => endpoint.close(() => resolve())) })
    const url = `http://127.0.0.1:${(endpoint.address() as AddressInfo).port}/v1`
    const failed = await createAgent({ provider: providerFor(url, 'm1', stream), retry: { maxAttempts: 1 } })
      .run('hi')
      .catch((e: unknown) => e)
    expect(failed).toBeInstanceOf(RunFailedError)
    expect(failed).toMatchObject({ code: 'PROVIDER_ERROR' })
    // Streamed, the provider package reads the JSON body as an empty event stream: its type says what came back.
    expect((failed as Error).message).toMatch(
      stream
        ? /^The scripted\.chat model "m1" answered with something the provider cannot read \(.*\); the reply was application\/json, not an event stream\.$/
        : /^The model endpoint http:\/\/127\.0\.0\.1:\d+\/v1\/chat\/completions \(scripted\.chat model "m1"\) answered 200 with something the provider cannot read .*: \{\}\.$/,
    )
  })
})
