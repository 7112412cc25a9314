import { ConfigError, createAgent, deny, type Tool, type ToolContext, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { SimulatedClock, waitFor } from 'xstate'
import { z } from 'zod'
import { deferred, eventsOf, recordEvents, recordingTool, runFailure, toolResultIn } from './helpers.ts'

const bookTicket = (calls: unknown[] = []) =>
  tool({
    name: 'book_ticket',
    description: 'Book one seat on a train.',
    schema: z.object({ train: z.number().int(), seat_class: z.enum(['first', 'tourist']), note: z.string().optional() }),
    execute: (args) => {
      calls.push(args)
      return { booked: args.train, seat: args.seat_class }
    },
  })

/** Runs one reply with the given calls, then a final answer; returns what the model read. */
async function oneReply(
  calls: { id: string; name: string; arguments: string | Record<string, unknown> }[],
  tools: Tool<any>[] = [bookTicket()],
) {
  const provider = new ScriptedProvider({ script: [{ toolCalls: calls }, { content: 'done' }] })
  const agent = createAgent({ provider, tools })
  const events = recordEvents(agent)
  const result = await agent.run('book it')
  const read = (id: string) => toolResultIn(provider.requests[1]?.messages ?? [], id) ?? ''
  return { result, events, read, provider }
}

describe('tool definitions', () => {
  it('send the model a JSON Schema generated from the zod schema', async () => {
    const provider = new ScriptedProvider({ script: [{ content: 'ok' }] })
    await createAgent({ provider, tools: [bookTicket()] }).run('hi')
    const [spec] = provider.requests[0]?.tools ?? []
    expect(spec?.name).toBe('book_ticket')
    expect(spec?.description).toBe('Book one seat on a train.')
    expect(spec?.parameters).toMatchObject({
      type: 'object',
      properties: {
        train: { type: 'integer' },
        seat_class: { type: 'string', enum: ['first', 'tourist'] },
        note: { type: 'string' },
      },
      required: ['train', 'seat_class'],
    })
    expect(spec?.parameters).not.toHaveProperty('$schema')
  })

  it('reject a bad name, a non-object schema and duplicate names at definition time', () => {
    const run = () => 'x'
    expect(() => tool({ name: 'has space', description: '', schema: z.object({}), execute: run })).toThrow(ConfigError)
    expect(() => tool({ name: 'n', description: '', schema: z.string(), execute: run })).toThrow(/z\.object/)
    const t = recordingTool('dup').tool
    expect(() => createAgent({ provider: new ScriptedProvider({ script: [] }), tools: [t, t] })).toThrow(
      /Two tools are named "dup"/,
    )
  })

  it('a tool returning an object is read by the model as JSON', async () => {
    const { read } = await oneReply([{ id: 'c1', name: 'book_ticket', arguments: { train: 3, seat_class: 'tourist' } }])
    expect(JSON.parse(read('c1'))).toEqual({ booked: 3, seat: 'tourist' })
  })
})

describe('bad tool calls from the model', () => {
  it('arguments that are not JSON: the tool does not run, the model is told why', async () => {
    const calls: unknown[] = []
    const { read, events } = await oneReply([{ id: 'c1', name: 'book_ticket', arguments: '{"train": 3,' }], [bookTicket(calls)])
    expect(calls).toEqual([])
    expect(read('c1')).toMatch(/not valid JSON/)
    expect(read('c1')).toContain('book_ticket')
    expect(eventsOf(events, 'tool.end')[0]).toMatchObject({ isError: true, outcome: 'invalid_arguments' })
  })

  it('arguments that fail the schema: the tool does not run, the model reads every problem', async () => {
    const calls: unknown[] = []
    const { read } = await oneReply(
      [{ id: 'c1', name: 'book_ticket', arguments: { train: 'three', seat_class: 'business' } }],
      [bookTicket(calls)],
    )
    expect(calls).toEqual([])
    const text = read('c1')
    expect(text).toContain('invalid arguments for "book_ticket"')
    expect(text).toMatch(/train: .*number/i)
    expect(text).toMatch(/seat_class: .*(first|tourist)/)
  })

  it('an unknown tool: the model reads the names of the tools that exist', async () => {
    const { read, events } = await oneReply(
      [{ id: 'c1', name: 'book_flight', arguments: {} }],
      [bookTicket(), recordingTool('find_trains').tool],
    )
    expect(read('c1')).toContain('unknown tool "book_flight"')
    expect(read('c1')).toContain('book_ticket')
    expect(read('c1')).toContain('find_trains')
    expect(eventsOf(events, 'tool.end')[0]).toMatchObject({ isError: true, outcome: 'unknown_tool' })
  })
})

describe('a tool that throws', () => {
  it('gives the model an error result and the run goes on', async () => {
    const broken = tool({
      name: 'broken',
      description: 'Always fails.',
      schema: z.object({}),
      execute: () => {
        throw new Error('timetable service is down')
      },
    })
    const { result, read, events } = await oneReply([{ id: 'c1', name: 'broken', arguments: {} }], [broken])
    expect(result.status).toBe('done')
    expect(result.output).toBe('done')
    expect(read('c1')).toContain('timetable service is down')
    expect(eventsOf(events, 'tool.end')[0]).toMatchObject({ isError: true, outcome: 'failed' })
  })
})

describe('several calls in one reply', () => {
  it('each gets its own decision, and results go back in the calls order', async () => {
    const order: string[] = []
    const slowFirst = tool({
      name: 'echo',
      description: 'Echo.',
      schema: z.object({ x: z.string() }),
      execute: async ({ x }) => {
        order.push(x)
        return `echo ${x}`
      },
    })
    const provider = new ScriptedProvider({
      script: [
        {
          toolCalls: [
            { id: 'a', name: 'echo', arguments: { x: '1' } },
            { id: 'b', name: 'echo', arguments: { x: 'deny-me' } },
            { id: 'c', name: 'echo', arguments: { x: '3' } },
          ],
        },
        { content: 'done' },
      ],
    })
    const agent = createAgent({
      provider,
      tools: [slowFirst],
      hooks: {
        beforeToolExecution: ({ input }) => ((input as { x: string }).x === 'deny-me' ? deny('not that one') : undefined),
      },
    })
    await agent.run('go')
    expect(order).toEqual(['1', '3'])
    const sent = provider.requests[1]?.messages ?? []
    expect(sent.slice(-3)).toEqual([
      { role: 'tool', tool_call_id: 'a', content: 'echo 1' },
      { role: 'tool', tool_call_id: 'b', content: 'not that one' },
      { role: 'tool', tool_call_id: 'c', content: 'echo 3' },
    ])
  })
})

describe('per-tool timeout', () => {
  it('aborts the tool signal and gives the model a timeout error (simulated clock)', async () => {
    const clock = new SimulatedClock()
    const started = deferred<ToolContext>()
    const slow = tool({
      name: 'slow',
      description: 'Takes forever.',
      schema: z.object({}),
      timeoutMs: 2_000,
      // Ignores its signal on purpose: the timeout must still win.
      execute: (_args, context) => {
        started.resolve(context)
        return new Promise(() => {})
      },
    })
    const provider = new ScriptedProvider({
      script: [{ toolCalls: [{ id: 'c1', name: 'slow', arguments: {} }] }, { content: 'gave up' }],
    })
    const agent = createAgent({ provider, tools: [slow], clock })
    const events = recordEvents(agent)
    const handle = agent.start('go')
    const context = await started.promise
    clock.increment(1_999)
    expect(context.signal.aborted).toBe(false)
    clock.increment(1)
    expect(context.signal.aborted).toBe(true)
    const result = await handle.result
    expect(result.output).toBe('gave up')
    const read = toolResultIn(provider.requests[1]?.messages ?? [], 'c1')
    expect(read).toMatch(/timed out after 2000 ms/)
    expect(eventsOf(events, 'tool.end')[0]).toMatchObject({ isError: true, outcome: 'timeout' })
  })

  it('does not fire for a tool that finishes in time', async () => {
    const clock = new SimulatedClock()
    const quick = tool({ name: 'quick', description: 'Quick.', schema: z.object({}), timeoutMs: 50, execute: () => 'fast' })
    const provider = new ScriptedProvider({
      script: [{ toolCalls: [{ id: 'c1', name: 'quick', arguments: {} }] }, { content: 'ok' }],
    })
    const handle = createAgent({ provider, tools: [quick], clock }).start('go')
    await waitFor(handle.actor, (s) => s.status === 'done')
    clock.increment(1_000)
    expect(toolResultIn(provider.requests[1]?.messages ?? [], 'c1')).toBe('fast')
  })
})

describe('maxTurns', () => {
  it('fails the run with MAX_TURNS_EXCEEDED when the model never answers', async () => {
    const looping = { toolCalls: [{ name: 't', arguments: {} }] }
    const provider = new ScriptedProvider({ script: [looping, looping, looping] })
    const agent = createAgent({ provider, tools: [recordingTool('t').tool], maxTurns: 3 })
    const error = await runFailure(agent.run('go'))
    expect(error.code).toBe('MAX_TURNS_EXCEEDED')
    expect(error.message).toContain('3')
    expect(error.result.status).toBe('failed')
    expect(error.result.stopReason).toBe('max_turns')
    expect(error.result.turns).toBe(3)
    expect(provider.requests).toHaveLength(3)
    provider.assertDone()
  })

  it('rejects a maxTurns that is not a positive integer', () => {
    const provider = new ScriptedProvider({ script: [] })
    expect(() => createAgent({ provider, maxTurns: 0 })).toThrow(ConfigError)
    expect(() => createAgent({ provider, maxTurns: 1.5 })).toThrow(ConfigError)
  })
})
