/**
 * OpenAIProvider sends the transcript as JSON text it makes itself, each frozen (transcript)
 * message serialized once per run. What reaches the endpoint must be what the SDK's own `create`
 * sends, on every path: plain and streamed, with extra fields, a response format and tools; a
 * message that is not frozen (a hook's rewrite) must be read afresh on each call; and a client
 * given (AzureOpenAI routes by the body; a wrapper watches `create`) or a `create` that
 * instrumentation wrapped keeps being called.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAgent, OpenAIProvider, type Provider, type ProviderRequest, tool } from '@signalbox/core'
import fc from 'fast-check'
import OpenAI, { AzureOpenAI } from 'openai'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { deepFreeze } from '../../src/events.ts'
import { requestJson } from '../../src/provider/request-json.ts'

interface Captured {
  path: string
  headers: IncomingMessage['headers']
  body: string
}

const open: Server[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => new Promise((resolve) => s.close(resolve))))
})

const completion = {
  id: 'chatcmpl-1',
  object: 'chat.completion',
  created: 0,
  model: 'm1',
  choices: [{ index: 0, message: { role: 'assistant', content: 'done' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
}
const chunk = { id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 0, model: 'm1' }
const events = [
  { ...chunk, choices: [{ index: 0, delta: { role: 'assistant', content: 'done' }, finish_reason: null }] },
  { ...chunk, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] },
  { ...chunk, choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } },
]

/** An endpoint that answers every chat-completions request and keeps what it was sent, byte for byte. */
async function capturing(): Promise<{ url: string; requests: Captured[] }> {
  const requests: Captured[] = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      requests.push({ path: req.url ?? '', headers: req.headers, body })
      if ((JSON.parse(body) as { stream?: boolean }).stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        for (const event of events) res.write(`data: ${JSON.stringify(event)}\n\n`)
        res.end('data: [DONE]\n\n')
      } else {
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify(completion))
      }
    })
  })
  open.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests }
}

/** A transcript as a run holds it: frozen deep, an assistant message with a tool call among them. */
function transcript(): ProviderRequest['messages'] {
  const messages: ProviderRequest['messages'] = [
    { role: 'system', content: 'You book trains.' },
    { role: 'user', content: 'Trains to "Rosario", Sábado?' },
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'find_trains', arguments: '{"to":"Rosario"}' } }],
    },
    { role: 'tool', tool_call_id: 'call_1', content: 'Train 3 leaves at 9:00\n\u2028ok' },
  ]
  return messages.map((m) => deepFreeze(m))
}

/** A frozen user message that counts how often it is serialized (JSON.stringify calls toJSON). */
function countedMessage(content: string): { message: { role: 'user'; content: string }; reads: () => number } {
  let reads = 0
  const message = Object.freeze({
    role: 'user' as const,
    content,
    toJSON() {
      reads++
      return { role: 'user', content }
    },
  })
  return { message, reads: () => reads }
}

const request: ProviderRequest = {
  messages: transcript(),
  tools: [
    {
      name: 'find_trains',
      description: 'List the trains to a destination.',
      parameters: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    },
  ],
  responseFormat: {
    type: 'json_schema',
    name: 'answer',
    schema: { type: 'object', properties: { text: { type: 'string' } } },
    strict: true,
  },
}

describe('requestJson', () => {
  it('is JSON.stringify of the body, frozen or not, whatever the messages and fields', () => {
    const shared = {}
    const json = fc.jsonValue()
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            json,
            json.map((v) => deepFreeze(v)),
            fc.constant(undefined),
          ),
        ),
        fc.dictionary(fc.string(), json),
        (messages, fields) => {
          const expected = JSON.parse(JSON.stringify({ ...fields, messages }))
          expect(JSON.parse(requestJson(messages, fields))).toEqual(expected)
          // One run's key for every example: a transcript unlike the last one reuses nothing.
          expect(JSON.parse(requestJson(messages, fields, shared))).toEqual(expected)
        },
      ),
    )
  })

  it('stays JSON.stringify of the body over a growing transcript, whatever is appended, replaced or changed', () => {
    type Step =
      | { op: 'append'; value: unknown; freeze: boolean }
      | { op: 'replace'; at: number; value: unknown }
      | { op: 'change'; at: number; value: unknown }
      | { op: 'restart' }
    const value = fc.jsonValue()
    const step: fc.Arbitrary<Step> = fc.oneof(
      { weight: 4, arbitrary: fc.record({ op: fc.constant('append' as const), value, freeze: fc.boolean() }) },
      fc.record({ op: fc.constant('replace' as const), at: fc.nat(), value }),
      fc.record({ op: fc.constant('change' as const), at: fc.nat(), value }),
      fc.record({ op: fc.constant('restart' as const) }),
    )
    fc.assert(
      fc.property(fc.array(step, { maxLength: 30 }), fc.dictionary(fc.string(), value), (steps, fields) => {
        // Messages are objects; the transcript is a new array on every call, as a run's context makes it.
        let transcript: { v: unknown }[] = [Object.freeze({ v: 'first' })]
        const run = {}
        for (const s of steps) {
          if (s.op === 'append') transcript = [...transcript, s.freeze ? deepFreeze({ v: s.value }) : { v: s.value }]
          else if (s.op === 'restart') transcript = transcript.slice(0, 1)
          else if (transcript.length > 0) {
            const at = s.at % transcript.length
            const message = transcript[at] as { v: unknown }
            if (s.op === 'replace') transcript = transcript.map((m, i) => (i === at ? deepFreeze({ v: s.value }) : m))
            else if (!Object.isFrozen(message)) message.v = s.value
          }
          const sent = JSON.parse(requestJson(transcript, fields, run))
          expect(sent).toEqual(JSON.parse(JSON.stringify({ ...fields, messages: transcript })))
        }
      }),
    )
  })

  it('serializes a frozen message once per run, a message that is not frozen on every call, nothing kept without a run', () => {
    const { message: frozen, reads: frozenReads } = countedMessage('fixed')
    let openReads = 0
    const rewritten = { role: 'user', content: 'first' }
    const counted = {
      ...rewritten,
      toJSON: () => {
        openReads++
        return { role: 'user', content: rewritten.content }
      },
    }
    const run = {}
    expect(JSON.parse(requestJson([frozen, counted], { model: 'm' }, run)).messages[1].content).toBe('first')
    rewritten.content = 'second'
    expect(JSON.parse(requestJson([frozen, counted], { model: 'm' }, run)).messages[1].content).toBe('second')
    expect(frozenReads()).toBe(1)
    expect(openReads).toBe(2)
    // Another run, and no run at all, serialize it afresh.
    requestJson([frozen], { model: 'm' }, {})
    requestJson([frozen], { model: 'm' })
    requestJson([frozen], { model: 'm' })
    expect(frozenReads()).toBe(4)
  })
})

describe('OpenAIProvider: the body on the wire', () => {
  it.each([false, true])('stream: %s sends what the SDK create() sends, as application/json', async (stream) => {
    const server = await capturing()
    const extraBody = { temperature: 0.2, messages: ['ignored: the transcript wins'], metadata: { team: 'trains' } }
    const provider = new OpenAIProvider({ baseURL: server.url, model: 'm1', apiKey: 'k', stream, extraBody })
    const signal = new AbortController().signal
    const response = await provider.complete(request, { signal })
    expect(response.message.content).toBe('done')
    expect(response.usage).toEqual({ promptTokens: 1, completionTokens: 1, totalTokens: 2 })

    // The same request through the SDK's own create(), as OpenAIProvider built it before.
    const client = new OpenAI({ baseURL: server.url, apiKey: 'k', maxRetries: 0 })
    const body = {
      ...extraBody,
      model: 'm1',
      messages: request.messages,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'answer', schema: request.responseFormat?.schema, strict: true },
      },
      tools: [{ type: 'function', function: request.tools[0] }],
    }
    if (stream) {
      const chunks = await client.chat.completions.create(
        { ...body, stream: true, stream_options: { include_usage: true } } as never,
        { maxRetries: 0 },
      )
      for await (const _ of chunks as unknown as AsyncIterable<unknown>) void _
    } else {
      await client.chat.completions.create({ ...body, stream: false } as never, { maxRetries: 0 })
    }

    const [ours, sdk] = server.requests as [Captured, Captured]
    expect(ours.path).toBe('/v1/chat/completions')
    expect(ours.path).toBe(sdk.path)
    expect(ours.headers['content-type']).toBe('application/json')
    expect(ours.headers.authorization).toBe('Bearer k')
    expect(JSON.parse(ours.body)).toEqual(JSON.parse(sdk.body))
    expect(JSON.parse(ours.body).messages).toHaveLength(4)
  })

  it('a frozen message is serialized once per run, one that is not (a hook rewrote it) on every call', async () => {
    const server = await capturing()
    const provider = new OpenAIProvider({ baseURL: server.url, model: 'm1', apiKey: 'k', stream: false })
    const { message: first, reads } = countedMessage('Trains to Rosario?')
    const masked = { role: 'user' as const, content: 'my card is 4111 1111 1111 1111' }
    const messages = [first, ...transcript(), masked]
    const run = {}
    await provider.complete({ messages, tools: [] }, { signal: new AbortController().signal, run })
    masked.content = 'my card is [masked]'
    await provider.complete({ messages, tools: [] }, { signal: new AbortController().signal, run })
    const sent = server.requests.map((r) => (JSON.parse(r.body) as { messages: { content: string }[] }).messages.at(-1)?.content)
    expect(sent).toEqual(['my card is 4111 1111 1111 1111', 'my card is [masked]'])
    expect(reads()).toBe(1)
    // No tools offered: no tools field (some endpoints reject an empty array).
    expect(JSON.parse(server.requests[0]?.body ?? '{}')).not.toHaveProperty('tools')
  })

  it('a client of a subclass (AzureOpenAI routes by the body) gets create(), and its own route', async () => {
    const server = await capturing()
    const client = new AzureOpenAI({
      baseURL: server.url.replace(/\/v1$/, '/openai'),
      apiKey: 'k',
      apiVersion: '2024-10-21',
      maxRetries: 0,
    })
    const provider = new OpenAIProvider({ client, model: 'trains-deployment', stream: false })
    const response = await provider.complete({ messages: transcript(), tools: [] }, { signal: new AbortController().signal })
    expect(response.message.content).toBe('done')
    const [sent] = server.requests as [Captured]
    expect(sent.path).toBe('/openai/deployments/trains-deployment/chat/completions?api-version=2024-10-21')
    expect(JSON.parse(sent.body).messages).toEqual(JSON.parse(JSON.stringify(transcript())))
  })

  it('a client given is called through create(), each call serializing the whole transcript', async () => {
    const server = await capturing()
    const client = new OpenAI({ baseURL: server.url, apiKey: 'k', maxRetries: 0 })
    const provider = new OpenAIProvider({ client, model: 'm1', stream: false })
    const { message: first, reads } = countedMessage('Trains to Rosario?')
    const run = {}
    for (let i = 0; i < 2; i++)
      await provider.complete({ messages: [first], tools: [] }, { signal: new AbortController().signal, run })
    expect(server.requests).toHaveLength(2)
    expect(reads()).toBe(2)
  })

  it('a create() that instrumentation wrapped (marked __wrapped) sees the calls of the client built here', async () => {
    const server = await capturing()
    const prototype = Object.getPrototypeOf(new OpenAI({ apiKey: 'k' }).chat.completions) as {
      create: (...a: unknown[]) => unknown
    }
    const original = prototype.create
    const seen: unknown[] = []
    const wrapped = Object.assign(
      function (this: unknown, ...args: unknown[]) {
        seen.push(args[0])
        return original.apply(this, args)
      },
      { __wrapped: true },
    )
    prototype.create = wrapped
    try {
      const provider = new OpenAIProvider({ baseURL: server.url, model: 'm1', apiKey: 'k', stream: false })
      await provider.complete({ messages: transcript(), tools: [] }, { signal: new AbortController().signal })
    } finally {
      prototype.create = original
    }
    expect(seen).toHaveLength(1)
    expect(server.requests).toHaveLength(1)
  })
})

describe('ProviderCallOptions.run', () => {
  it('is one empty object per run, the same on each of its model calls', async () => {
    const seen: { run: object | undefined; turn: number }[] = []
    const provider: Provider = {
      model: 'm',
      async complete(request, options) {
        const turn = request.messages.filter((m) => m.role === 'assistant').length
        seen.push({ run: options.run, turn })
        return turn < 2
          ? {
              message: {
                role: 'assistant',
                content: null,
                tool_calls: [{ id: `call_${turn}`, type: 'function', function: { name: 'noop', arguments: '{}' } }],
              },
              finishReason: 'tool_calls',
              usage: undefined,
              model: 'm',
            }
          : { message: { role: 'assistant', content: 'done' }, finishReason: 'stop', usage: undefined, model: 'm' }
      },
    }
    const noop = tool({ name: 'noop', description: 'Does nothing.', schema: z.object({}), execute: () => 'ok' })
    const agent = createAgent({ provider, tools: [noop] })
    await Promise.all([agent.run('first'), agent.run('second')])
    expect(seen).toHaveLength(6)
    const keys = [...new Set(seen.map((s) => s.run))]
    expect(keys).toHaveLength(2)
    for (const key of keys) {
      expect(key).toEqual({})
      expect(seen.filter((s) => s.run === key).map((s) => s.turn)).toEqual([0, 1, 2])
    }
  })
})
