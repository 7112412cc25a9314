import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type AgentOptions, ConfigError, createAgent, OpenAIProvider, tool } from '@signalbox/core'
import { type ScriptedModelServer, type Scripts, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { SimulatedClock, waitFor } from 'xstate'
import { z } from 'zod'
import { eventsOf, recordEvents, runFailure } from './helpers.ts'

const open: { close(): unknown }[] = []
afterEach(async () => {
  vi.unstubAllEnvs()
  await Promise.all(open.splice(0).map((s) => s.close()))
})

async function serve(scripts: Scripts, port?: number): Promise<ScriptedModelServer> {
  const server = await startScriptedModelServer({ scripts, ...(port === undefined ? {} : { port }) })
  open.push(server)
  return server
}

/** A port nobody listens on (connection refused). */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

function findTrains() {
  const calls: unknown[] = []
  const t = tool({
    name: 'find_trains',
    description: 'List the trains to a destination on a date.',
    schema: z.object({ to: z.string(), date: z.string() }),
    execute: (args) => {
      calls.push(args)
      return 'Train 3 leaves at 9:00'
    },
  })
  return { tool: t, calls }
}

function agentOn(baseURL: string, options: Partial<AgentOptions> & { stream?: boolean } = {}) {
  const { stream, ...rest } = options
  const provider = new OpenAIProvider({ baseURL, model: 'm1', apiKey: 'test', ...(stream === undefined ? {} : { stream }) })
  const trains = findTrains()
  const agent = createAgent({ provider, tools: [trains.tool], retry: { baseDelayMs: 1, maxDelayMs: 5 }, ...rest })
  return { agent, events: recordEvents(agent), trains }
}

describe('OpenAIProvider over HTTP', () => {
  it.each([true, false])('stream: %s assembles text and tool calls', async (stream) => {
    const server = await serve({
      m1: [
        {
          content: 'Let me look that up for you.',
          toolCalls: [
            { id: 'call_a', name: 'find_trains', arguments: { to: 'Mar del Plata', date: 'Friday' } },
            { id: 'call_b', name: 'find_trains', arguments: { to: 'Rosario, "central"', date: 'Sábado' } },
          ],
        },
        { content: 'Train 3 leaves at nine, and the one to Rosario too.' },
      ],
    })
    const { agent, events, trains } = agentOn(server.url, { stream })
    const result = await agent.run('Trains to Mar del Plata and Rosario?')
    expect(result.output).toBe('Train 3 leaves at nine, and the one to Rosario too.')
    expect(result.messages[1]).toEqual({
      role: 'assistant',
      content: 'Let me look that up for you.',
      tool_calls: [
        {
          id: 'call_a',
          type: 'function',
          function: { name: 'find_trains', arguments: '{"to":"Mar del Plata","date":"Friday"}' },
        },
        {
          id: 'call_b',
          type: 'function',
          function: { name: 'find_trains', arguments: '{"to":"Rosario, \\"central\\"","date":"Sábado"}' },
        },
      ],
    })
    expect(trains.calls).toEqual([
      { to: 'Mar del Plata', date: 'Friday' },
      { to: 'Rosario, "central"', date: 'Sábado' },
    ])
    expect(result.usage.totalTokens).toBeGreaterThan(0)
    expect(server.requests.map((r) => r.stream)).toEqual([stream, stream])
    expect(server.requests[0]?.model).toBe('m1')
    expect(server.requests[0]?.tools[0]).toMatchObject({
      name: 'find_trains',
      parameters: { type: 'object', required: ['to', 'date'] },
    })
    expect(server.requests[1]?.messages.slice(-2)).toEqual([
      { role: 'tool', tool_call_id: 'call_a', content: 'Train 3 leaves at 9:00' },
      { role: 'tool', tool_call_id: 'call_b', content: 'Train 3 leaves at 9:00' },
    ])
    const deltas = eventsOf(events, 'text.delta').map((e) => e.delta)
    if (stream) expect(deltas.join('')).toBe('Let me look that up for you.Train 3 leaves at nine, and the one to Rosario too.')
    server.assertDone()
  })

  it('retries 429 and 500 with backoff, as model.retry events', async () => {
    const server = await serve({
      m1: [
        { error: { status: 429, message: 'slow down' }, headers: { 'retry-after-ms': '3' } },
        { error: { status: 500, message: 'oops' } },
        { content: 'finally' },
      ],
    })
    const { agent, events } = agentOn(server.url)
    const result = await agent.run('hi')
    expect(result.output).toBe('finally')
    expect(server.requests).toHaveLength(3)
    const retries = eventsOf(events, 'model.retry')
    expect(retries.map((e) => [e.attempt, e.error.code])).toEqual([
      [1, 'PROVIDER_RATE_LIMITED'],
      [2, 'PROVIDER_UNAVAILABLE'],
    ])
    expect(retries[0]?.delayMs).toBe(3)
    expect(retries[1]?.delayMs).toBeGreaterThanOrEqual(1)
    expect(retries[1]?.delayMs).toBeLessThanOrEqual(5)
    expect(eventsOf(events, 'model.request').map((e) => e.attempt)).toEqual([1, 2, 3])
  })

  it('fails the run once retries are exhausted', async () => {
    const server = await serve({ m1: [{ error: { status: 503, message: 'overloaded' }, times: 10 }] })
    const { agent, events } = agentOn(server.url, { retry: { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5 } })
    const error = await runFailure(agent.run('hi'))
    expect(error.code).toBe('PROVIDER_UNAVAILABLE')
    expect(error.message).toContain('overloaded')
    expect(error.result.status).toBe('failed')
    expect(error.result.stopReason).toBe('provider_error')
    expect(server.requests).toHaveLength(3)
    expect(eventsOf(events, 'model.retry')).toHaveLength(2)
  })

  it.each([
    [401, 'PROVIDER_AUTH', /Check the API key \(apiKey or OPENAI_API_KEY\)/],
    [404, 'PROVIDER_NOT_FOUND', /Check that the model "m1" exists at .* \(model or SIGNALBOX_MODEL\)/],
    [400, 'PROVIDER_REJECTED', /check the model supports tool calls/],
  ])('%i ends the run at once with %s and says what to fix', async (status, code, hint) => {
    const server = await serve({ m1: [{ error: { status, message: `endpoint says ${status}` } }] })
    const { agent, events } = agentOn(server.url)
    const error = await runFailure(agent.run('hi'))
    expect(error.code).toBe(code)
    expect(error.message).toMatch(hint)
    expect(error.message).toContain(`endpoint says ${status}`)
    expect(error.message).toContain(server.url)
    expect(error.result.status).toBe('failed')
    expect(server.requests).toHaveLength(1)
    expect(eventsOf(events, 'model.retry')).toEqual([])
    expect(eventsOf(events, 'run.error')[0]?.error.code).toBe(code)
  })

  it('retries a refused connection, and recovers when the server comes up', async () => {
    const port = await freePort()
    const clock = new SimulatedClock()
    const { agent, events } = agentOn(`http://127.0.0.1:${port}/v1`, { clock, retry: { baseDelayMs: 1_000, maxDelayMs: 1_000 } })
    const handle = agent.start('hi')
    await waitFor(handle.actor, (s) => s.matches({ running: { turn: 'waitingToRetry' } }))
    expect(eventsOf(events, 'model.retry')[0]?.error.code).toBe('PROVIDER_UNREACHABLE')
    await serve({ m1: [{ content: 'up again' }] }, port)
    clock.increment(1_000)
    expect((await handle.result).output).toBe('up again')
  })

  it('gives up on a refused connection with a message saying what to check', async () => {
    const port = await freePort()
    const { agent, events } = agentOn(`http://127.0.0.1:${port}/v1`, { retry: { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 } })
    const error = await runFailure(agent.run('hi'))
    expect(error.code).toBe('PROVIDER_UNREACHABLE')
    expect(error.message).toMatch(
      /Could not reach the model endpoint .*: Connection error \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)\. Is the server running\?/,
    )
    expect(eventsOf(events, 'model.retry')).toHaveLength(1)
  })

  it('retries a connection reset in the middle of a streamed reply', async () => {
    let requests = 0
    const chunk = (delta: unknown, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm1', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
    const server: Server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        if (++requests === 1) {
          res.write(chunk({ role: 'assistant', content: 'Hal' }))
          setImmediate(() => res.socket?.destroy())
          return
        }
        res.end(`${chunk({ role: 'assistant', content: 'Hello' })}${chunk({}, 'stop')}data: [DONE]\n\n`)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    open.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) })
    const { agent, events } = agentOn(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`)
    const result = await agent.run('hi')
    expect(result.output).toBe('Hello')
    expect(requests).toBe(2)
    expect(eventsOf(events, 'model.retry')[0]?.error.code).toBe('PROVIDER_UNREACHABLE')
  })

  it('a cancelled run aborts the HTTP request', async () => {
    const server = await serve({ m1: [{ content: 'too late', delayMs: 60_000 }] })
    const { agent } = agentOn(server.url)
    const handle = agent.start('hi')
    await waitFor(handle.actor, (s) => s.hasTag('model'))
    while (server.requests.length === 0) await new Promise<void>((resolve) => setImmediate(resolve))
    handle.cancel()
    const error = await runFailure(handle.result)
    expect(error.code).toBe('RUN_CANCELLED')
  })
})

describe('OpenAIProvider configuration', () => {
  it('defaults to OPENAI_BASE_URL, OPENAI_API_KEY and SIGNALBOX_MODEL', async () => {
    const server = await serve({ 'env-model': [{ content: 'from env' }] })
    vi.stubEnv('OPENAI_BASE_URL', server.url)
    vi.stubEnv('OPENAI_API_KEY', 'sk-from-env')
    vi.stubEnv('SIGNALBOX_MODEL', 'env-model')
    const provider = new OpenAIProvider()
    expect(provider.model).toBe('env-model')
    expect(provider.baseURL).toBe(server.url)
    const result = await createAgent({ provider }).run('hi')
    expect(result.output).toBe('from env')
    expect(server.requests[0]?.model).toBe('env-model')
    expect(server.requests[0]?.headers.authorization).toBe('Bearer sk-from-env')
  })

  it('explicit options win over the environment', () => {
    vi.stubEnv('OPENAI_BASE_URL', 'http://env.invalid/v1')
    vi.stubEnv('SIGNALBOX_MODEL', 'env-model')
    const provider = new OpenAIProvider({ baseURL: 'http://127.0.0.1:1/v1', model: 'explicit' })
    expect(provider.model).toBe('explicit')
    expect(provider.baseURL).toBe('http://127.0.0.1:1/v1')
  })

  it('without a model it throws a ConfigError saying how to give one', () => {
    vi.stubEnv('SIGNALBOX_MODEL', undefined)
    expect(() => new OpenAIProvider({ baseURL: 'http://127.0.0.1:1/v1' })).toThrow(ConfigError)
    expect(() => new OpenAIProvider({ baseURL: 'http://127.0.0.1:1/v1' })).toThrow(/SIGNALBOX_MODEL/)
  })
})
