import {
  AGENT_EVENT_TYPES,
  type AgentEvent,
  type AgentEventType,
  askHumanTool,
  createAgent,
  type Reviewer,
  ScriptedAnswerer,
  tool,
} from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { SimulatedClock, waitFor } from 'xstate'
import { z } from 'zod'
import { eventsOf, ManualProvider, recordEvents, recordingTool, runFailure, typesOf } from './helpers.ts'

const typicalScript = () =>
  new ScriptedProvider({
    script: [{ toolCalls: [{ id: 'c1', name: 't', arguments: { x: 'a' } }] }, { content: 'The answer is forty two.' }],
  })

describe('events', () => {
  it('a typical run emits the documented events in order', async () => {
    const agent = createAgent({ provider: typicalScript(), tools: [recordingTool('t').tool] })
    const events = recordEvents(agent)
    await agent.run('question')
    const types = typesOf(events).filter((t, i, all) => t !== 'text.delta' || all[i - 1] !== 'text.delta')
    expect(types).toEqual([
      'run.start',
      'turn.start',
      'model.request',
      'model.response',
      'tool.start',
      'tool.end',
      'turn.end',
      'turn.start',
      'model.request',
      'text.delta',
      'model.response',
      'turn.end',
      'run.end',
    ])
    for (const type of typesOf(events)) expect(AGENT_EVENT_TYPES).toContain(type)
    const runIds = new Set(events.map((e) => e.runId))
    expect(runIds.size).toBe(1)
    expect(eventsOf(events, 'run.end')[0]).toMatchObject({ status: 'done', output: 'The answer is forty two.', turns: 2 })
    expect(eventsOf(events, 'tool.end')[0]).toMatchObject({ callId: 'c1', toolName: 't', output: 't:a', outcome: 'executed' })
    expect(eventsOf(events, 'turn.end').map((e) => e.toolCalls)).toEqual([1, 0])
  })

  it('text.delta fragments concatenate to the final text', async () => {
    const agent = createAgent({ provider: typicalScript(), tools: [recordingTool('t').tool] })
    const deltas: string[] = []
    agent.on('text.delta', (e) => deltas.push(e.delta))
    const result = await agent.run('question')
    expect(deltas.length).toBeGreaterThan(1)
    expect(deltas.join('')).toBe(result.output)
  })

  it('are emitted after the hooks', async () => {
    const log: string[] = []
    const agent = createAgent({
      provider: typicalScript(),
      tools: [recordingTool('t').tool],
      hooks: {
        beforeTurn: () => void log.push('hook beforeTurn'),
        beforeProviderCall: ({ messages }) => {
          log.push('hook beforeProviderCall')
          return [...messages, { role: 'user', content: 'added by hook' }]
        },
        beforeToolExecution: () => void log.push('hook beforeToolExecution'),
        afterToolExecution: ({ output }) => {
          log.push('hook afterToolExecution')
          return `${output} (stamped)`
        },
        afterTurn: () => void log.push('hook afterTurn'),
      },
    })
    const events: AgentEvent[] = []
    agent.on('*', (e) => {
      if (e.type !== 'text.delta') log.push(e.type)
      events.push(e)
    })
    await agent.run('question')
    expect(log.slice(0, 13)).toEqual([
      'run.start',
      'hook beforeTurn',
      'turn.start',
      'hook beforeProviderCall',
      'model.request',
      'model.response',
      'hook beforeToolExecution',
      'tool.start',
      'hook afterToolExecution',
      'tool.end',
      'hook afterTurn',
      'turn.end',
      'hook beforeTurn',
    ])
    expect(eventsOf(events, 'model.request')[0]?.messages.at(-1)?.content).toBe('added by hook')
    expect(eventsOf(events, 'tool.end')[0]?.output).toBe('t:a (stamped)')
  })

  it('a listener that throws, or rejects, neither breaks nor changes the run', async () => {
    const baseline = await createAgent({ provider: typicalScript(), tools: [recordingTool('t').tool] }).run('question')
    const internal: [unknown, string][] = []
    const agent = createAgent({
      provider: typicalScript(),
      tools: [recordingTool('t').tool],
      onInternalError: (error, where) => internal.push([error, where]),
    })
    agent.on('*', () => {
      throw new Error('sync listener bug')
    })
    agent.on('tool.end', async () => {
      throw new Error('async listener bug')
    })
    const after = recordEvents(agent)
    const result = await agent.run('question')
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(result.status).toBe('done')
    expect(result.output).toBe(baseline.output)
    expect(result.messages).toEqual(baseline.messages)
    // Listeners registered after a throwing one still get every event.
    expect(typesOf(after)).toContain('run.end')
    expect(internal.some(([e]) => (e as Error).message === 'sync listener bug')).toBe(true)
    expect(internal.some(([e]) => (e as Error).message === 'async listener bug')).toBe(true)
    expect(internal.every(([, where]) => where === 'event listener')).toBe(true)
  })

  it('an onInternalError handler that throws does not break the run either', async () => {
    const agent = createAgent({
      provider: typicalScript(),
      tools: [recordingTool('t').tool],
      onInternalError: () => {
        throw new Error('handler bug')
      },
    })
    agent.on('*', () => {
      throw new Error('listener bug')
    })
    agent.on('tool.end', () => Promise.reject(new Error('async listener bug')))
    const result = await agent.run('question')
    await new Promise<void>((resolve) => setImmediate(resolve))
    expect(result.status).toBe('done')
    expect(result.output).toBe('The answer is forty two.')
  })

  it('listeners receive frozen copies: mutating them does not touch the transcript', async () => {
    const provider = typicalScript()
    const agent = createAgent({ provider, tools: [recordingTool('t').tool] })
    const failures: unknown[] = []
    let attempts = 0
    agent.on('*', (e) => {
      expect(Object.isFrozen(e)).toBe(true)
      if (['model.request', 'model.response', 'tool.end', 'run.start'].includes(e.type)) attempts++
      try {
        if (e.type === 'model.request') e.messages.push({ role: 'user', content: 'injected' })
        if (e.type === 'model.response') (e.message as { content: string }).content = 'hijacked'
        if (e.type === 'tool.end') (e as { output: string }).output = 'hijacked'
        if (e.type === 'run.start') (e as { input: string }).input = 'hijacked'
      } catch (error) {
        failures.push(error)
      }
    })
    const result = await agent.run('question')
    expect(attempts).toBe(6)
    expect(failures).toHaveLength(attempts)
    for (const failure of failures) expect(failure).toBeInstanceOf(TypeError)
    expect(JSON.stringify(result.messages)).not.toContain('hijacked')
    expect(JSON.stringify(result.messages)).not.toContain('injected')
    expect(JSON.stringify(provider.requests)).not.toMatch(/hijacked|injected/)
    expect(result.messages[2]).toEqual({ role: 'tool', tool_call_id: 'c1', content: 't:a' })
  })

  it('on() returns an unsubscribe function', async () => {
    const agent = createAgent({ provider: typicalScript(), tools: [recordingTool('t').tool] })
    const seen: string[] = []
    const off = agent.on('run.start', (e) => seen.push(e.type))
    off()
    await agent.run('question')
    expect(seen).toEqual([])
  })

  it('every documented event type is emitted by some run', async () => {
    const seen = new Set<AgentEventType>()
    const watch = (agent: ReturnType<typeof createAgent>) => agent.on('*', (e) => seen.add(e.type))

    // Text, tools, a retry, then a refused request (run.error).
    const first = createAgent({
      provider: new ScriptedProvider({
        script: [
          { error: { status: 503, message: 'busy' } },
          { content: 'Let me check.', toolCalls: [{ name: 't', arguments: {} }] },
          { error: { status: 400, message: 'bad request' } },
        ],
      }),
      tools: [recordingTool('t').tool],
      retry: { baseDelayMs: 1, maxDelayMs: 1 },
    })
    watch(first)
    expect((await runFailure(first.run('go'))).code).toBe('PROVIDER_ERROR')

    // Approval granted, a forged decision rejected then a timeout; steering; a question.
    const clock = new SimulatedClock()
    const drop = tool({
      name: 'drop',
      description: 'Drop.',
      schema: z.object({ n: z.number() }),
      needsApproval: true,
      execute: () => 'ok',
    })
    let reviews = 0
    const reviewer: Reviewer = {
      review: async (request) => ({
        requestId: request.requestId,
        callId: reviews++ === 0 ? request.callId : 'forged',
        digest: request.digest,
        approved: true,
        reviewer: 'tina',
        decidedAt: clock.now(),
      }),
    }
    const provider = new ManualProvider()
    const second = createAgent({
      provider,
      clock,
      reviewer,
      approvalTimeoutMs: 1_000,
      tools: [drop, askHumanTool({ answerer: new ScriptedAnswerer(['the bear', 'never'], { clock }), timeoutMs: 500 })],
    })
    watch(second)
    const handle = second.start('go')
    await provider.called(1)
    handle.steer('use the left claw')
    provider.reply({
      toolCalls: [
        { id: 's', name: 'drop', arguments: { n: 0 } },
        { id: 'a', name: 'drop', arguments: { n: 1 } },
        { id: 'b', name: 'drop', arguments: { n: 2 } },
        { id: 'q1', name: 'ask_human', arguments: { question: 'which prize?' } },
        { id: 'q2', name: 'ask_human', arguments: { question: 'sure?' } },
      ],
    })
    await waitFor(handle.actor, (s) => s.hasTag('human') && s.context.current?.callId === 'b')
    clock.increment(1_000)
    await waitFor(handle.actor, (s) => s.hasTag('tool') && s.context.current?.callId === 'q2')
    clock.increment(500)
    await provider.called(2)
    provider.reply({ content: 'done' })
    await handle.result

    // No reviewer at all: the call is denied at once, as unavailable.
    const third = createAgent({
      provider: new ScriptedProvider({ script: [{ toolCalls: [{ name: 'drop', arguments: { n: 3 } }] }, { content: 'ok' }] }),
      tools: [drop],
    })
    watch(third)
    await third.run('go')

    expect([...AGENT_EVENT_TYPES].filter((t) => !seen.has(t))).toEqual([])
  })
})
