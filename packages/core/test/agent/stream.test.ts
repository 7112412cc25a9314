import {
  type AgentEvent,
  type AgentOptions,
  createAgent,
  OpenAIProvider,
  RunFailedError,
  ScriptedReviewer,
  type StreamItem,
  tool,
} from '@signalbox/core'
import { type ScriptedModelServer, type Scripts, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { deferred } from './helpers.ts'

const open: ScriptedModelServer[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})

async function serve(scripts: Scripts): Promise<ScriptedModelServer> {
  const server = await startScriptedModelServer({ scripts })
  open.push(server)
  return server
}

const provider = (server: ScriptedModelServer) => new OpenAIProvider({ baseURL: server.url, model: 'm1', apiKey: 'test' })

const lookup = (calls: unknown[] = []) =>
  tool({
    name: 'lookup',
    description: 'Look a word up.',
    schema: z.object({ word: z.string() }),
    execute: ({ word }) => {
      calls.push(word)
      return `${word}: found`
    },
  })

async function collect<R>(stream: AsyncIterable<StreamItem<R>>): Promise<StreamItem<R>[]> {
  const items: StreamItem<R>[] = []
  for await (const item of stream) items.push(item)
  return items
}

const typesOf = (items: StreamItem<unknown>[]) => items.map((i) => i.type)

describe('agent.stream', () => {
  it('yields the run’s text deltas and tool starts and ends, then the result', async () => {
    const server = await serve({
      m1: [
        { content: 'Looking it up. ', toolCalls: [{ id: 'c1', name: 'lookup', arguments: { word: 'penguin' } }] },
        { content: 'A penguin is a bird that cannot fly.' },
      ],
    })
    const agent = createAgent({ provider: provider(server), tools: [lookup()] })
    const items = await collect(agent.stream('What is a penguin?'))

    const types = typesOf(items)
    expect(types[0]).toBe('run.start')
    expect(types.at(-2)).toBe('run.end')
    expect(types.at(-1)).toBe('result')
    expect(types.indexOf('tool.start')).toBeLessThan(types.indexOf('tool.end'))
    const text = items.flatMap((i) => (i.type === 'text.delta' ? [i.delta] : [])).join('')
    expect(text).toBe('Looking it up. A penguin is a bird that cannot fly.')
    const last = items.at(-1)
    expect(last?.type === 'result' && last.result.output).toBe('A penguin is a bird that cannot fly.')
    expect(items.find((i) => i.type === 'tool.end')).toMatchObject({ callId: 'c1', output: 'penguin: found' })
    server.assertDone()
  })

  it('carries only its own run: a concurrent run’s events never appear', async () => {
    // Both runs are in flight together: each first reply waits, so their events interleave.
    const server = await serve({
      '*': (request) => {
        const asked = String(request.messages.find((m) => m.role === 'user')?.content)
        const answered = request.messages.some((m) => m.role === 'tool')
        if (answered) return { content: `done with ${asked}`, delayMs: 20 }
        return { toolCalls: [{ name: 'lookup', arguments: { word: asked } }], delayMs: 20 }
      },
    })
    const agent = createAgent({ provider: provider(server), tools: [lookup()] })
    const all: AgentEvent[] = []
    agent.on('*', (e) => all.push(e))
    const stream = agent.stream('alpha')
    const other = agent.run('beta')
    const [items, otherResult] = await Promise.all([collect(stream), other])

    const streamed = items.filter((i): i is AgentEvent => i.type !== 'result')
    expect(streamed.length).toBeGreaterThan(5)
    expect(new Set(streamed.map((e) => e.runId))).toEqual(new Set([stream.runId]))
    // The other run did emit while this one streamed, and all of this run's events were streamed.
    expect(all.some((e) => e.runId === otherResult.runId)).toBe(true)
    expect(streamed).toEqual(all.filter((e) => e.runId === stream.runId))
    expect(JSON.stringify(items)).not.toContain('beta')
  })

  it('breaking out of the loop cancels the run and aborts its tool', async () => {
    const server = await serve({
      m1: [{ toolCalls: [{ id: 'c1', name: 'slow', arguments: {} }] }, { content: 'never asked for' }],
    })
    const aborted = deferred<unknown>()
    const slow = tool({
      name: 'slow',
      description: 'Takes its time.',
      schema: z.object({}),
      execute: (_args, { signal }) =>
        new Promise<string>((_, reject) => {
          signal.addEventListener('abort', () => {
            aborted.resolve(signal.reason)
            reject(signal.reason)
          })
        }),
    })
    const agent = createAgent({ provider: provider(server), tools: [slow] })
    const stream = agent.stream('go')
    const seen: string[] = []
    for await (const item of stream) {
      seen.push(item.type)
      if (item.type === 'tool.start') break
    }
    await aborted.promise
    const error = await stream.result.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(RunFailedError)
    expect((error as RunFailedError).result.status).toBe('cancelled')
    expect((error as RunFailedError).message).toContain('the stream was closed by its reader')
    expect(seen.at(-1)).toBe('tool.start')
    expect(server.requests).toHaveLength(1)
    expect(agent.runs.size).toBe(0)
  })

  it('an aborted signal cancels the run; the loop ends by throwing its RunFailedError after run.end', async () => {
    const server = await serve({ m1: [{ content: 'too late', delayMs: 5_000 }] })
    const agent = createAgent({ provider: provider(server) })
    const controller = new AbortController()
    const seen: string[] = []
    const loop = (async () => {
      for await (const item of agent.stream('hi', { signal: controller.signal })) {
        seen.push(item.type)
        if (item.type === 'model.request') controller.abort('user left')
      }
    })()
    const error = await loop.then(
      () => undefined,
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(RunFailedError)
    expect((error as RunFailedError).result.status).toBe('cancelled')
    expect(seen.at(-1)).toBe('run.end')
    expect(seen).not.toContain('result')
  })

  it('streams approvals and steering, and steers through the stream', async () => {
    const server = await serve({
      m1: [
        {
          toolCalls: [
            { id: 'c1', name: 'book', arguments: { seat: '12A' } },
            { id: 'c2', name: 'book', arguments: { seat: '12B' } },
          ],
        },
        { content: 'Booked 12A; 12B was cancelled.' },
      ],
    })
    const booked: string[] = []
    const book = tool({
      name: 'book',
      description: 'Book a seat.',
      schema: z.object({ seat: z.string() }),
      needsApproval: true,
      execute: ({ seat }) => {
        booked.push(seat)
        return `booked ${seat}`
      },
    })
    const options: AgentOptions = { provider: provider(server), tools: [book], reviewer: new ScriptedReviewer([true, 'never']) }
    const agent = createAgent(options)
    const stream = agent.stream('Book two seats.')
    const items: StreamItem<unknown>[] = []
    for await (const item of stream) {
      items.push(item)
      // The first call is approved and runs; the second waits for a person, who corrects instead.
      if (item.type === 'approval.requested' && item.request.callId === 'c2') stream.steer('Only one seat.', { from: 'tina' })
    }
    expect(booked).toEqual(['12A'])
    const types = typesOf(items)
    for (const type of ['approval.requested', 'approval.decided', 'steering.queued', 'steering.applied'])
      expect(types).toContain(type)
    expect(items.find((i) => i.type === 'steering.applied')).toMatchObject({ callId: 'c2', text: 'Only one seat.' })
    expect(types.at(-1)).toBe('result')
  })

  it('can be iterated once', async () => {
    const server = await serve({ m1: [{ content: 'hi' }] })
    const stream = createAgent({ provider: provider(server) }).stream('hi')
    await collect(stream)
    expect(() => stream[Symbol.asyncIterator]()).toThrow(/iterated once/)
  })
})
