/**
 * An endpoint that answers 200 with something other than a chat completion (a JSON object of its
 * own, a proxy's HTML page, an event stream of something else) fails the call with a
 * PROVIDER_ERROR naming what came back, streamed or not: it used to end a streamed run as `done`
 * with output "" and a non-streamed one with a TypeError.
 */
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAgent, OpenAIProvider } from '@signalbox/core'
import { afterEach, describe, expect, it } from 'vitest'
import { eventsOf, recordEvents, runFailure } from './helpers.ts'

const open: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((close) => close()))
})

/** An HTTP endpoint that answers every request 200 with `body` as `contentType`; counts requests. */
async function endpoint(contentType: string, body: string): Promise<{ url: string; requests: () => number }> {
  let requests = 0
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      requests++
      res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) })
      res.end(body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  open.push(() => new Promise<void>((resolve) => server.close(() => resolve())))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests: () => requests }
}

async function failedRun(url: string, stream: boolean) {
  const agent = createAgent({
    provider: new OpenAIProvider({ baseURL: url, model: 'm1', apiKey: 'test', stream }),
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
  })
  const events = recordEvents(agent)
  const error = await runFailure(agent.run('hi'))
  return { error, events }
}

const NOT_A_COMPLETION = /^The model endpoint http:\/\/127\.0\.0\.1:\d+\/v1 \(model "m1"\) /

describe('a 200 that is not a chat completion', () => {
  it.each([false, true])('`{}` as JSON (stream: %s) is a PROVIDER_ERROR naming it, not retried', async (stream) => {
    const server = await endpoint('application/json', '{}')
    const { error, events } = await failedRun(server.url, stream)
    expect(error.code).toBe('PROVIDER_ERROR')
    expect(error.message).toMatch(NOT_A_COMPLETION)
    expect(error.message).toContain(
      stream
        ? 'answered 200 with application/json instead of an event stream of chat-completion chunks: {}.'
        : 'answered 200 with a body that is not a chat completion: {}.',
    )
    expect(error.message).toContain('Check that baseURL points at an OpenAI-compatible API')
    expect(server.requests()).toBe(1)
    expect(eventsOf(events, 'model.retry')).toEqual([])
    expect(error.result.output).toBe('')
    expect(error.result.status).toBe('failed')
  })

  it.each([false, true])("a proxy's HTML page (stream: %s) is named, shortened", async (stream) => {
    const page = `<html><body>${'Please log in. '.repeat(40)}</body></html>`
    const server = await endpoint('text/html', page)
    const { error } = await failedRun(server.url, stream)
    expect(error.code).toBe('PROVIDER_ERROR')
    expect(error.message).toMatch(NOT_A_COMPLETION)
    expect(error.message).toMatch(/answered 200 with .*: <html><body>Please log in\./)
    expect(error.message).toContain('…')
    expect(error.message.length).toBeLessThan(600)
  })

  it('an event stream of something else: the first event that is not a chunk is named', async () => {
    const server = await endpoint('text/event-stream', 'data: {"hello":"world"}\n\ndata: [DONE]\n\n')
    const { error } = await failedRun(server.url, true)
    expect(error.code).toBe('PROVIDER_ERROR')
    expect(error.message).toMatch(NOT_A_COMPLETION)
    expect(error.message).toContain('streamed an event that is not a chat-completion chunk: {"hello":"world"}.')
  })

  it('an event stream with no chunk at all is not an empty answer', async () => {
    const server = await endpoint('text/event-stream', 'data: [DONE]\n\n')
    const { error } = await failedRun(server.url, true)
    expect(error.code).toBe('PROVIDER_ERROR')
    expect(error.message).toContain('streamed no chat-completion chunk. Check that baseURL')
  })

  it('a completion with an empty list of choices is still the retryable "no choices"', async () => {
    const server = await endpoint('application/json', JSON.stringify({ id: 'x', object: 'chat.completion', choices: [] }))
    const { error, events } = await failedRun(server.url, false)
    expect(error.message).toMatch(/returned no choices/)
    expect(eventsOf(events, 'model.retry').length).toBeGreaterThan(0)
  })
})
