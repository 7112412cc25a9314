import type { ChatCompletionChunk } from 'openai/resources/chat/completions'
import { describe, expect, it } from 'vitest'
import { serve, weatherTool } from './helpers.ts'

const user = (content: string) => [{ role: 'user' as const, content }]

describe('scripted model server: non-streaming', () => {
  it('answers text in the chat.completion shape', async () => {
    const { server, client } = await serve({ 'gpt-test': [{ content: 'Hello there.' }] })
    const res = await client.chat.completions.create({ model: 'gpt-test', messages: user('hi') })
    expect(res.object).toBe('chat.completion')
    expect(res.id).toMatch(/^chatcmpl-/)
    expect(res.model).toBe('gpt-test')
    expect(res.choices).toHaveLength(1)
    expect(res.choices[0]?.message).toEqual({ role: 'assistant', content: 'Hello there.', refusal: null })
    expect(res.choices[0]?.finish_reason).toBe('stop')
    expect(res.usage?.prompt_tokens).toBeGreaterThan(0)
    expect(res.usage?.completion_tokens).toBeGreaterThan(0)
    expect(res.usage?.total_tokens).toBe((res.usage?.prompt_tokens ?? 0) + (res.usage?.completion_tokens ?? 0))
    server.assertDone()
  })

  it('round-trips tool calls exactly, with default and given ids, and scripted usage', async () => {
    const rawArgs = '{"city": "Zürich",  "units":"metric"}'
    const { server, client } = await serve({
      m: [
        {
          toolCalls: [
            { name: 'get_weather', arguments: { city: 'Paris', nested: { a: [1, 2] } } },
            { id: 'my-id', name: 'get_weather', arguments: rawArgs },
          ],
          usage: { promptTokens: 11, completionTokens: 7 },
        },
      ],
    })
    const res = await client.chat.completions.create({ model: 'm', messages: user('weather?'), tools: [weatherTool] })
    const message = res.choices[0]?.message
    expect(res.choices[0]?.finish_reason).toBe('tool_calls')
    expect(message?.content).toBeNull()
    expect(message?.tool_calls).toEqual([
      { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris","nested":{"a":[1,2]}}' } },
      { id: 'my-id', type: 'function', function: { name: 'get_weather', arguments: rawArgs } },
    ])
    expect(res.usage).toEqual({ prompt_tokens: 11, completion_tokens: 7, total_tokens: 18 })
    server.assertDone()
  })

  it('plays array steps in order and gives each default tool-call id once', async () => {
    const step = { toolCalls: [{ name: 't', arguments: {} }] }
    const { client } = await serve({ m: [step, step, { content: 'done', finishReason: 'length' }] })
    const ids: (string | undefined)[] = []
    for (let i = 0; i < 2; i++) {
      const res = await client.chat.completions.create({ model: 'm', messages: user('go') })
      const call = res.choices[0]?.message.tool_calls?.[0]
      ids.push(call?.type === 'function' ? call.id : undefined)
    }
    expect(ids).toEqual(['call_1', 'call_2'])
    const last = await client.chat.completions.create({ model: 'm', messages: user('go') })
    expect(last.choices[0]?.message.content).toBe('done')
    expect(last.choices[0]?.finish_reason).toBe('length')
  })
})

describe('scripted model server: streaming', () => {
  async function collect(stream: AsyncIterable<ChatCompletionChunk>) {
    const chunks: ChatCompletionChunk[] = []
    for await (const chunk of stream) chunks.push(chunk)
    return chunks
  }

  it('streams text in several deltas, then finish_reason, then a usage chunk', async () => {
    const text = 'The quick brown fox jumps over the lazy dog.'
    const { server, client } = await serve({ m: [{ content: text }] })
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'm',
        messages: user('hi'),
        stream: true,
        stream_options: { include_usage: true },
      }),
    )
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]?.id)).toBe(true)
    expect(chunks[0]?.choices[0]?.delta.role).toBe('assistant')
    const contentDeltas = chunks.flatMap((c) => (c.choices[0]?.delta.content ? [c.choices[0].delta.content] : []))
    expect(contentDeltas.length).toBeGreaterThan(5)
    expect(contentDeltas.join('')).toBe(text)

    const finishes = chunks.flatMap((c) => c.choices.map((choice) => choice.finish_reason)).filter(Boolean)
    expect(finishes).toEqual(['stop'])
    const last = chunks.at(-1)
    expect(last?.choices).toEqual([])
    expect(last?.usage?.completion_tokens).toBeGreaterThan(0)
    expect(last?.usage?.total_tokens).toBe((last?.usage?.prompt_tokens ?? 0) + (last?.usage?.completion_tokens ?? 0))
    expect(chunks.slice(0, -1).every((c) => c.usage == null)).toBe(true)
    expect(server.requests[0]?.stream).toBe(true)
  })

  it('omits the usage chunk without include_usage', async () => {
    const { client } = await serve({ m: [{ content: 'a b' }] })
    const chunks = await collect(await client.chat.completions.create({ model: 'm', messages: user('hi'), stream: true }))
    expect(chunks.every((c) => c.choices.length === 1 && !c.usage)).toBe(true)
    expect(chunks.at(-1)?.choices[0]?.finish_reason).toBe('stop')
  })

  it('streams several tool calls with distinct indexes, arguments in fragments', async () => {
    const argsA = JSON.stringify({ city: 'Paris', note: 'a fairly long argument string to force several fragments 🌧️' })
    const argsB = '{"city":"Oslo"}'
    const { client } = await serve({
      m: [
        {
          content: 'Checking both.',
          toolCalls: [
            { name: 'get_weather', arguments: argsA },
            { id: 'b', name: 'get_weather', arguments: argsB },
          ],
        },
      ],
    })
    const chunks = await collect(
      await client.chat.completions.create({
        model: 'm',
        messages: user('hi'),
        tools: [weatherTool],
        stream: true,
        stream_options: { include_usage: true },
      }),
    )
    const calls = new Map<number, { id?: string; type?: string; name?: string; args: string; fragments: number }>()
    let text = ''
    for (const chunk of chunks) {
      const delta = chunk.choices[0]?.delta
      text += delta?.content ?? ''
      for (const tc of delta?.tool_calls ?? []) {
        const entry = calls.get(tc.index) ?? { args: '', fragments: 0 }
        if (tc.id) {
          // The first chunk of a call names it and carries empty arguments, like the real API.
          expect(entry.id).toBeUndefined()
          expect(tc.function?.arguments).toBe('')
          Object.assign(entry, { id: tc.id, type: tc.type, name: tc.function?.name })
        } else {
          expect(tc.function?.name).toBeUndefined()
          entry.fragments += 1
        }
        entry.args += tc.function?.arguments ?? ''
        calls.set(tc.index, entry)
      }
    }
    expect(text).toBe('Checking both.')
    expect([...calls.keys()]).toEqual([0, 1])
    expect(calls.get(0)).toMatchObject({ id: 'call_1', type: 'function', name: 'get_weather', args: argsA })
    expect(calls.get(0)?.fragments).toBeGreaterThan(2)
    expect(calls.get(1)).toMatchObject({ id: 'b', type: 'function', name: 'get_weather', args: argsB })
    expect(chunks.at(-2)?.choices[0]).toMatchObject({ finish_reason: 'tool_calls', delta: {} })
  })

  it('assembles through the SDK stream helper too', async () => {
    const { client } = await serve({
      m: [{ content: 'Hi you', toolCalls: [{ name: 'get_weather', arguments: { city: 'Rome' } }] }],
    })
    const stream = client.chat.completions.stream({ model: 'm', messages: user('hi'), tools: [weatherTool] })
    const final = await stream.finalChatCompletion()
    expect(final.choices[0]?.message.content).toBe('Hi you')
    expect(final.choices[0]?.message.tool_calls?.[0]).toMatchObject({
      id: 'call_1',
      function: { name: 'get_weather', arguments: '{"city":"Rome"}' },
    })
  })
})

describe('scripted model server: routing and recording', () => {
  it('routes per model and falls back to "*"', async () => {
    const { server, client } = await serve({ a: [{ content: 'from a' }], '*': [{ content: 'any 1' }, { content: 'any 2' }] })
    const ask = async (model: string) =>
      (await client.chat.completions.create({ model, messages: user('q') })).choices[0]?.message.content
    expect(await ask('other')).toBe('any 1')
    expect(await ask('a')).toBe('from a')
    expect(await ask('third')).toBe('any 2')
    expect(server.requestsFor('a')).toHaveLength(1)
    expect(server.requests.map((r) => r.model)).toEqual(['other', 'a', 'third'])
    server.assertDone()
  })

  it('answers from a responder function with the request and its index', async () => {
    const { server, client } = await serve({
      '*': async (request, index) => ({ content: `#${index} ${request.model}: ${String(request.messages.at(-1)?.content)}` }),
    })
    const first = await client.chat.completions.create({ model: 'x', messages: user('one') })
    const second = await client.chat.completions.create({ model: 'y', messages: user('two') })
    expect(first.choices[0]?.message.content).toBe('#0 x: one')
    expect(second.choices[0]?.message.content).toBe('#1 y: two')
    server.assertDone()
  })

  it('records messages, tools, headers and the raw body as sent', async () => {
    const { server, client } = await serve({ m: [{ content: 'ok' }] })
    const messages = [
      { role: 'system' as const, content: 'be brief' },
      { role: 'user' as const, content: 'weather in Paris?' },
      {
        role: 'assistant' as const,
        content: null,
        tool_calls: [{ id: 'c1', type: 'function' as const, function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool' as const, tool_call_id: 'c1', content: 'rain' },
    ]
    const before = Date.now()
    await client.chat.completions.create({ model: 'm', messages, tools: [weatherTool], temperature: 0.2 })
    const [request] = server.requests
    expect(request?.messages).toEqual(messages)
    expect(request?.tools).toEqual([weatherTool.function])
    expect(request?.stream).toBe(false)
    expect(request?.body).toMatchObject({ model: 'm', temperature: 0.2 })
    expect(request?.headers.authorization).toBe('Bearer test')
    expect(request?.receivedAt).toBeGreaterThanOrEqual(before)
  })

  it('lists the script keys on GET /v1/models', async () => {
    const { client } = await serve({ a: [], b: [], '*': [] })
    const models = await client.models.list()
    expect(models.data.map((m) => m.id).sort()).toEqual(['*', 'a', 'b'])
  })

  it('reset() forgets requests and restarts or replaces the scripts', async () => {
    const { server, client } = await serve({ m: [{ content: 'first' }] })
    await client.chat.completions.create({ model: 'm', messages: user('q') })
    const kept = server.requests
    server.reset()
    expect(kept).toHaveLength(0)
    expect((await client.chat.completions.create({ model: 'm', messages: user('q') })).choices[0]?.message.content).toBe('first')
    server.reset({ n: [{ content: 'new' }] })
    expect((await client.chat.completions.create({ model: 'n', messages: user('q') })).choices[0]?.message.content).toBe('new')
    server.assertDone()
  })
})
