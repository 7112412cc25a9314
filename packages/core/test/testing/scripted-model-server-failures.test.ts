import { startScriptedModelServer } from '@signalbox/core/testing'
import OpenAI from 'openai'
import { describe, expect, it, vi } from 'vitest'
import { serve } from './helpers.ts'

const user = (content: string) => [{ role: 'user' as const, content }]

/** Resolves with `check()`'s first truthy value, checking on each turn of the event loop. */
async function until<T>(check: () => T): Promise<NonNullable<T>> {
  for (;;) {
    const value = check()
    if (value) return value as NonNullable<T>
    await new Promise((resolve) => setImmediate(resolve))
  }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

describe('scripted model server: error steps', () => {
  it.each([
    [401, OpenAI.AuthenticationError],
    [404, OpenAI.NotFoundError],
    [429, OpenAI.RateLimitError],
    [500, OpenAI.InternalServerError],
    [503, OpenAI.InternalServerError],
  ])('status %i surfaces as the SDK error class', async (status, ErrorClass) => {
    const { server, client } = await serve({ m: [{ error: { status, message: `boom ${status}`, code: 'some_code' } }] })
    const error = await rejection(client.chat.completions.create({ model: 'm', messages: user('q') }))
    expect(error).toBeInstanceOf(ErrorClass)
    expect((error as InstanceType<typeof OpenAI.APIError>).status).toBe(status)
    expect((error as InstanceType<typeof OpenAI.APIError>).code).toBe('some_code')
    expect((error as Error).message).toContain(`boom ${status}`)
    expect(server.failures).toEqual([])
    server.assertDone()
  })

  it('repeats an error `times` times, then moves on', async () => {
    const { server, client } = await serve({
      m: [{ error: { status: 429, message: 'slow down', type: 'requests' }, times: 2 }, { content: 'finally' }],
    })
    for (let i = 0; i < 2; i++) {
      const error = await rejection(client.chat.completions.create({ model: 'm', messages: user('q') }))
      expect(error).toBeInstanceOf(OpenAI.RateLimitError)
      expect((error as InstanceType<typeof OpenAI.APIError>).type).toBe('requests')
    }
    const res = await client.chat.completions.create({ model: 'm', messages: user('q') })
    expect(res.choices[0]?.message.content).toBe('finally')
    server.assertDone()
  })

  it('lets the SDK retry an error step when retries are on', async () => {
    const { server } = await serve({
      m: [{ error: { status: 503, message: 'busy' }, headers: { 'retry-after-ms': '1' } }, { content: 'after retry' }],
    })
    const client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 1 })
    const res = await client.chat.completions.create({ model: 'm', messages: user('q') })
    expect(res.choices[0]?.message.content).toBe('after retry')
    expect(server.requests).toHaveLength(2)
  })
})

describe('scripted model server: loud failures', () => {
  it('an exhausted script answers 500, is recorded, and assertDone() throws it', async () => {
    const { server, client } = await serve({ x: [{ content: 'one' }, { content: 'two' }] })
    await client.chat.completions.create({ model: 'x', messages: user('q') })
    await client.chat.completions.create({ model: 'x', messages: user('q') })
    const error = await rejection(client.chat.completions.create({ model: 'x', messages: user('q') }))
    const message = 'scripted model: unexpected request #3 for model "x": script exhausted'
    expect(error).toBeInstanceOf(OpenAI.InternalServerError)
    expect((error as InstanceType<typeof OpenAI.APIError>).error).toMatchObject({ message, type: 'scripted_model_error' })
    expect(server.failures.map((f) => f.message)).toEqual([message])
    expect(() => server.assertDone()).toThrow(message)
  })

  it('does not let the SDK retry a loud failure away', async () => {
    const { server } = await serve({ x: [] })
    const client = new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 3 })
    await expect(client.chat.completions.create({ model: 'x', messages: user('q') })).rejects.toBeInstanceOf(
      OpenAI.InternalServerError,
    )
    expect(server.requests).toHaveLength(1)
  })

  it('an unknown model is a loud failure naming the known scripts', async () => {
    const { server, client } = await serve({ a: [{ content: 'hi' }] })
    const error = await rejection(client.chat.completions.create({ model: 'nope', messages: user('q') }))
    expect(error).toBeInstanceOf(OpenAI.InternalServerError)
    expect(server.failures[0]?.message).toBe(
      'scripted model: unexpected request #1 for model "nope": no script for this model (scripts: "a")',
    )
    expect(() => server.assertDone()).toThrow(/model "a": 1 unconsumed step\(s\)[\s\S]*model "nope"/)
  })

  it('a failed expect is a loud mismatch; a passing one answers', async () => {
    const { server, client } = await serve({
      m: [
        { expect: (r) => r.tools.length === 1 || `expected 1 tool, got ${r.tools.length}`, content: 'fine' },
        { expect: (r) => r.messages.at(-1)?.content === 'yes' || 'last message should be "yes"', content: 'never' },
      ],
    })
    const tools = [{ type: 'function' as const, function: { name: 't', parameters: {} } }]
    expect((await client.chat.completions.create({ model: 'm', messages: user('q'), tools })).choices[0]?.message.content).toBe(
      'fine',
    )
    const error = await rejection(client.chat.completions.create({ model: 'm', messages: user('no') }))
    expect(error).toBeInstanceOf(OpenAI.InternalServerError)
    expect(server.failures.map((f) => f.message)).toEqual([
      'scripted model: unexpected request #2 for model "m": step #2 does not match: last message should be "yes"',
    ])
    expect(() => server.assertDone()).toThrow('step #2 does not match')
  })

  it('assertDone() lists unconsumed steps per model', async () => {
    const { server, client } = await serve({
      a: [{ content: 'used' }, { content: 'left over' }],
      b: [{ error: { status: 429, message: 'x' }, times: 3 }],
    })
    await client.chat.completions.create({ model: 'a', messages: user('q') })
    await rejection(client.chat.completions.create({ model: 'b', messages: user('q') }))
    expect(() => server.assertDone()).toThrow(
      /model "a": 1 unconsumed step\(s\): #2 reply "left over"\n.*model "b": 1 unconsumed step\(s\): #1 error 429 \(2 of 3 left\)/,
    )
  })

  it('a throwing responder is a loud failure', async () => {
    const { server, client } = await serve({
      m: () => {
        throw new Error('no idea')
      },
    })
    await expect(client.chat.completions.create({ model: 'm', messages: user('q') })).rejects.toBeInstanceOf(
      OpenAI.InternalServerError,
    )
    expect(server.failures[0]?.message).toContain('responder threw: no idea')
  })
})

describe('scripted model server: HTTP edges', () => {
  it('answers 404 JSON on unknown routes and 400 on malformed JSON', async () => {
    const { server } = await serve({ m: [] })
    const notFound = await fetch(`${server.url}/embeddings`, { method: 'POST', body: '{}' })
    expect(notFound.status).toBe(404)
    expect(((await notFound.json()) as { error: { message: string } }).error.message).toContain('unknown route')
    const bad = await fetch(`${server.url}/chat/completions`, {
      method: 'POST',
      body: '{"model":',
      headers: { 'content-type': 'application/json' },
    })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toMatchObject({ error: { type: 'invalid_request_error' } })
    expect(server.requests).toHaveLength(0)
  })

  // No timing here: a close() or an abort that waited for a delay would run into the test's time limit.
  it('a delay aborted by the client does not hang, and close() resolves', async () => {
    const { server, client } = await serve({ m: [{ delayMs: 3_600_000, content: 'too late' }] })
    // Watch the server's delay timer (an hour: the SDK's own default timeout is 10 minutes) to see that it is cleared on disconnect, not left to run.
    const setSpy = vi.spyOn(globalThis, 'setTimeout')
    const clearSpy = vi.spyOn(globalThis, 'clearTimeout')
    try {
      const controller = new AbortController()
      const pending = client.chat.completions.create({ model: 'm', messages: user('q') }, { signal: controller.signal })
      pending.catch(() => {})
      const delayTimer = await until(
        () => setSpy.mock.results[setSpy.mock.calls.findIndex((call) => call[1] === 3_600_000)]?.value,
      )
      expect(server.requests).toHaveLength(1)
      controller.abort()
      await expect(pending).rejects.toBeInstanceOf(OpenAI.APIUserAbortError)
      await until(() => clearSpy.mock.calls.some(([timer]) => timer === delayTimer))
    } finally {
      vi.restoreAllMocks()
    }
    await server.close()
  })

  it('close() ends a pending delay and keep-alive connections', async () => {
    const { server, client } = await serve({ m: [{ content: 'warm' }, { delayMs: 3_600_000, content: 'never' }] })
    await client.chat.completions.create({ model: 'm', messages: user('q') })
    const pending = client.chat.completions.create({ model: 'm', messages: user('q') })
    pending.catch(() => {})
    await until(() => server.requests.length === 2)
    await server.close()
    await expect(pending).rejects.toBeInstanceOf(OpenAI.APIConnectionError)
  })

  it('close() does not wait for a responder that never answers', async () => {
    let answering: () => void = () => {}
    const asked = new Promise<void>((resolve) => {
      answering = resolve
    })
    const { server, client } = await serve({
      m: () => {
        answering()
        return new Promise(() => {})
      },
    })
    const pending = client.chat.completions.create({ model: 'm', messages: user('q') })
    pending.catch(() => {})
    await asked
    await server.close()
    await expect(pending).rejects.toBeInstanceOf(OpenAI.APIConnectionError)
  })

  it('closes when its signal aborts', async () => {
    const controller = new AbortController()
    const server = await startScriptedModelServer({ scripts: { m: [] }, signal: controller.signal })
    controller.abort()
    await server.close()
    await expect(fetch(`${server.url}/models`)).rejects.toThrow()
  })
})
