import { ScriptedProvider, type ScriptStep } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { isAbortError, ProviderError, SignalboxError } from '../../src/errors.ts'
import type { Message } from '../../src/messages.ts'
import type { ProviderRequest } from '../../src/provider/provider.ts'
import { serve } from './helpers.ts'

const tool = {
  name: 'get_weather',
  description: 'Weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } } },
}
const ask = (content: string, tools = [tool]): ProviderRequest => ({ messages: [{ role: 'user', content }], tools })
const opts = (extra: { onTextDelta?: (d: string) => void; signal?: AbortSignal } = {}) => ({
  signal: new AbortController().signal,
  ...extra,
})

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

describe('ScriptedProvider', () => {
  it('answers text, streaming word-sized deltas, with non-zero usage', async () => {
    const provider = new ScriptedProvider({ script: [{ content: 'It is sunny in Paris.' }], model: 'fake-1' })
    const deltas: string[] = []
    const res = await provider.complete(ask('weather?'), opts({ onTextDelta: (d) => deltas.push(d) }))
    expect(res.message).toEqual({ role: 'assistant', content: 'It is sunny in Paris.' })
    expect(res.finishReason).toBe('stop')
    expect(res.model).toBe('fake-1')
    expect(deltas).toEqual(['It ', 'is ', 'sunny ', 'in ', 'Paris.'])
    expect(res.usage?.promptTokens).toBeGreaterThan(0)
    expect(res.usage?.completionTokens).toBeGreaterThan(0)
    expect(res.usage?.totalTokens).toBe((res.usage?.promptTokens ?? 0) + (res.usage?.completionTokens ?? 0))
    expect(provider.requests[0]?.stream).toBe(true)
    provider.assertDone()
  })

  it('returns tool calls with stringified arguments and unique default ids', async () => {
    const step: ScriptStep = {
      toolCalls: [
        { name: 'get_weather', arguments: { city: 'Oslo' } },
        { id: 'x', name: 'get_weather', arguments: '{bad json' },
      ],
    }
    const provider = new ScriptedProvider({ script: [step, step] })
    const first = await provider.complete(ask('a'), opts())
    const second = await provider.complete(ask('b'), opts())
    expect(first.finishReason).toBe('tool_calls')
    expect(first.message).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        { id: 'x', type: 'function', function: { name: 'get_weather', arguments: '{bad json' } },
      ],
    })
    expect(second.message.tool_calls?.[0]?.id).toBe('call_2')
    expect(provider.requests[1]?.stream).toBe(false)
  })

  it('records deep copies of the messages, or nothing with record: false', async () => {
    const provider = new ScriptedProvider({ script: [{ content: 'ok' }] })
    const request = ask('original')
    await provider.complete(request, opts())
    ;(request.messages[0] as { content: string }).content = 'mutated'
    request.messages.push({ role: 'user', content: 'later' })
    expect(provider.requests[0]?.messages).toEqual([{ role: 'user', content: 'original' }])
    expect(provider.requests[0]?.tools).toEqual([tool])
    expect(provider.requests[0]?.model).toBe('scripted')

    const cheap = new ScriptedProvider({ script: [{ content: 'ok' }], record: false })
    await cheap.complete(ask('q'), opts())
    expect(cheap.requests).toEqual([])
    cheap.assertDone()
  })

  it.each([
    [429, true],
    [500, true],
    [503, true],
    [400, false],
    [401, false],
  ])('an error step with status %i throws a ProviderError (retryable: %s)', async (status, retryable) => {
    const provider = new ScriptedProvider({ script: [{ error: { status, message: `failed ${status}` } }] })
    const error = await rejection(provider.complete(ask('q'), opts()))
    expect(error).toBeInstanceOf(ProviderError)
    expect(error).toMatchObject({ code: 'PROVIDER_ERROR', status, retryable, message: `failed ${status}` })
    provider.assertDone()
  })

  it('repeats an error step `times` times before moving on', async () => {
    const provider = new ScriptedProvider({ script: [{ error: { status: 429, message: 'slow' }, times: 3 }, { content: 'ok' }] })
    for (let i = 0; i < 3; i++) await expect(provider.complete(ask('q'), opts())).rejects.toBeInstanceOf(ProviderError)
    expect((await provider.complete(ask('q'), opts())).message.content).toBe('ok')
  })

  it('throws SCRIPT_EXHAUSTED loudly and assertDone() reports it', async () => {
    const provider = new ScriptedProvider({ script: [{ content: 'only' }], model: 'x' })
    await provider.complete(ask('q'), opts())
    const error = await rejection(provider.complete(ask('q'), opts()))
    expect(error).toBeInstanceOf(SignalboxError)
    expect(error).not.toBeInstanceOf(ProviderError)
    expect(error).toMatchObject({
      code: 'SCRIPT_EXHAUSTED',
      message: 'scripted model: unexpected request #2 for model "x": script exhausted',
    })
    expect(provider.failures).toEqual([error])
    expect(() => provider.assertDone()).toThrow('script exhausted')
  })

  it('throws SCRIPT_MISMATCH when expect fails', async () => {
    const provider = new ScriptedProvider({
      script: [
        { expect: (r) => r.tools.length === 0 || `expected no tools, got ${r.tools.map((t) => t.name).join()}`, content: 'no' },
      ],
    })
    const error = await rejection(provider.complete(ask('q'), opts()))
    expect(error).toMatchObject({ code: 'SCRIPT_MISMATCH' })
    expect((error as Error).message).toContain('step #1 does not match: expected no tools, got get_weather')
    expect(() => provider.assertDone()).toThrow(SignalboxError)
  })

  it('assertDone() lists unconsumed steps', async () => {
    const provider = new ScriptedProvider({
      script: [{ content: 'a' }, { toolCalls: [{ name: 'get_weather', arguments: {} }] }],
      model: 'm',
    })
    await provider.complete(ask('q'), opts())
    expect(() => provider.assertDone()).toThrow('model "m": 1 unconsumed step(s): #2 reply tool calls get_weather')
  })

  it('aborts a delay with an AbortError, promptly', async () => {
    const provider = new ScriptedProvider({ script: [{ delayMs: 60_000, content: 'late' }] })
    const controller = new AbortController()
    const started = Date.now()
    const pending = provider.complete(ask('q'), opts({ signal: controller.signal }))
    setTimeout(() => controller.abort(), 10)
    const error = await rejection(pending)
    expect((error as Error).name).toBe('AbortError')
    expect(isAbortError(error)).toBe(true)
    expect(Date.now() - started).toBeLessThan(2_000)
  })

  it('rejects at once on an already aborted signal, and honours short delays', async () => {
    const provider = new ScriptedProvider({ script: [{ delayMs: 30, content: 'after a pause' }] })
    const aborted = AbortSignal.abort()
    expect(((await rejection(provider.complete(ask('q'), opts({ signal: aborted })))) as Error).name).toBe('AbortError')
    const started = Date.now()
    expect((await provider.complete(ask('q'), opts())).message.content).toBe('after a pause')
    expect(Date.now() - started).toBeGreaterThanOrEqual(25)
  })

  it('answers from a responder, and reset() restarts or replaces the script', async () => {
    const provider = new ScriptedProvider({ script: (request, index) => ({ content: `${index}:${request.messages.length}` }) })
    expect((await provider.complete(ask('q'), opts())).message.content).toBe('0:1')
    expect((await provider.complete(ask('q'), opts())).message.content).toBe('1:1')
    provider.reset()
    expect(provider.requests).toHaveLength(0)
    expect((await provider.complete(ask('q'), opts())).message.content).toBe('0:1')
    provider.reset([{ content: 'replaced' }])
    expect((await provider.complete(ask('q'), opts())).message.content).toBe('replaced')
    provider.assertDone()
  })
})

describe('ScriptedProvider and the scripted model server agree', () => {
  it('the same script yields the same message, finish reason and usage', async () => {
    const script: ScriptStep[] = [
      { content: 'Let me check.', toolCalls: [{ name: 'get_weather', arguments: { city: 'Lima' } }] },
      { content: 'Sunny.', usage: { promptTokens: 30, completionTokens: 2 } },
    ]
    const transcript: Message[] = [{ role: 'user', content: 'weather in Lima?' }]
    const provider = new ScriptedProvider({ script, model: 'm' })
    const { server, client } = await serve({ m: script })
    for (let turn = 0; turn < 2; turn++) {
      const local = await provider.complete({ messages: transcript, tools: [tool] }, opts())
      const remote = await client.chat.completions.create({
        model: 'm',
        messages: transcript,
        tools: [{ type: 'function', function: tool }],
      })
      const choice = remote.choices[0]
      const { refusal: _refusal, ...remoteMessage } = choice?.message ?? {}
      expect(remoteMessage).toEqual(local.message)
      expect(choice?.finish_reason).toBe(local.finishReason)
      expect(remote.usage).toEqual({
        prompt_tokens: local.usage?.promptTokens,
        completion_tokens: local.usage?.completionTokens,
        total_tokens: local.usage?.totalTokens,
      })
      transcript.push(local.message)
      if (local.message.tool_calls) transcript.push({ role: 'tool', tool_call_id: 'call_1', content: 'sunny' })
    }
    provider.assertDone()
    server.assertDone()
  })
})
