import { allow, createAgent, deny, HookError, type Hooks, RunFailedError, respond } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { SimulatedClock, waitFor } from 'xstate'
import { deferred, eventsOf, recordEvents, recordingTool, runFailure, toolResultIn } from './helpers.ts'

/** One tool call (`c1`, tool `t`), then a final answer. */
const oneCall = (args: Record<string, unknown> = { x: 'a' }) =>
  new ScriptedProvider({ script: [{ toolCalls: [{ id: 'c1', name: 't', arguments: args }] }, { content: 'finished' }] })

describe('hook points', () => {
  it('calls each of the five hooks at its point with the right context', async () => {
    const t = recordingTool('t', () => 'raw result')
    const seen: { point: string; ctx: Record<string, unknown> }[] = []
    const log = (point: string) => (ctx: object) => {
      seen.push({ point, ctx: JSON.parse(JSON.stringify(ctx)) as Record<string, unknown> })
      expect((ctx as { signal: AbortSignal }).signal).toBeInstanceOf(AbortSignal)
    }
    const agent = createAgent({
      id: 'hooked',
      provider: oneCall(),
      tools: [t.tool],
      instructions: 'be brief',
      hooks: {
        beforeTurn: log('beforeTurn'),
        beforeProviderCall: log('beforeProviderCall'),
        beforeToolExecution: log('beforeToolExecution'),
        afterToolExecution: log('afterToolExecution'),
        afterTurn: log('afterTurn'),
      },
    })
    const result = await agent.run('go', { runId: 'r1' })
    expect(seen.map((s) => `${s.point}@${s.ctx.turn}`)).toEqual([
      'beforeTurn@1',
      'beforeProviderCall@1',
      'beforeToolExecution@1',
      'afterToolExecution@1',
      'afterTurn@1',
      'beforeTurn@2',
      'beforeProviderCall@2',
      'afterTurn@2',
    ])
    for (const { ctx } of seen) expect(ctx).toMatchObject({ agentId: 'hooked', runId: 'r1' })
    const [bt, bpc, bte, ate, at1] = seen.map((s) => s.ctx)
    expect(bt?.messages).toEqual([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: 'go' },
    ])
    expect(bpc?.messages).toEqual(bt?.messages)
    expect(bpc?.tools).toEqual([expect.objectContaining({ name: 't', parameters: expect.objectContaining({ type: 'object' }) })])
    expect(bte).toMatchObject({ callId: 'c1', toolName: 't', input: { x: 'a' } })
    expect(ate).toMatchObject({ callId: 'c1', toolName: 't', input: { x: 'a' }, output: 'raw result', isError: false })
    expect(at1?.reply).toMatchObject({ role: 'assistant', tool_calls: [expect.objectContaining({ id: 'c1' })] })
    expect(at1?.toolResults).toEqual([{ role: 'tool', tool_call_id: 'c1', content: 'raw result' }])
    expect(seen[7]?.ctx.reply).toEqual({ role: 'assistant', content: 'finished' })
    expect(result.output).toBe('finished')
  })

  it('beforeProviderCall trims messages, adds context and hides a tool for this turn', async () => {
    const provider = new ScriptedProvider({ script: [{ content: 'ok' }] })
    const agent = createAgent({
      provider,
      tools: [recordingTool('keep').tool, recordingTool('secret').tool],
      hooks: {
        beforeProviderCall: ({ messages, tools }) => ({
          messages: [{ role: 'system', content: 'Today is Friday.' }, ...messages.slice(-1)],
          tools: tools.filter((t) => t.name !== 'secret'),
        }),
      },
    })
    const history = [
      { role: 'user' as const, content: 'old question' },
      { role: 'assistant' as const, content: 'old answer' },
      { role: 'user' as const, content: 'new question' },
    ]
    const result = await agent.run(history)
    expect(provider.requests[0]?.messages).toEqual([
      { role: 'system', content: 'Today is Friday.' },
      { role: 'user', content: 'new question' },
    ])
    expect(provider.requests[0]?.tools.map((t) => t.name)).toEqual(['keep'])
    // The transcript itself is not trimmed: only what was sent this turn.
    expect(result.messages.slice(0, 3)).toEqual(history)
  })

  it('a tool hidden by beforeProviderCall is an unknown tool when the model calls it anyway', async () => {
    const provider = new ScriptedProvider({
      script: [{ toolCalls: [{ id: 'c1', name: 'secret', arguments: { x: 'now' } }] }, { content: 'ok' }],
    })
    const secret = recordingTool('secret')
    const agent = createAgent({
      provider,
      tools: [recordingTool('keep').tool, secret.tool],
      hooks: { beforeProviderCall: ({ tools }) => ({ tools: tools.filter((t) => t.name !== 'secret') }) },
    })
    const ends: { outcome: string; output: string }[] = []
    agent.on('tool.end', (e) => ends.push({ outcome: e.outcome, output: e.output }))
    const result = await agent.run('go')
    expect(secret.calls).toEqual([])
    expect(ends).toEqual([{ outcome: 'unknown_tool', output: 'Error: unknown tool "secret". Available tools: keep.' }])
    expect(toolResultIn(result.messages, 'c1')).toBe('Error: unknown tool "secret". Available tools: keep.')
  })

  it('beforeProviderCall may return a plain message list', async () => {
    const provider = new ScriptedProvider({ script: [{ content: 'ok' }] })
    const agent = createAgent({
      provider,
      hooks: { beforeProviderCall: ({ messages }) => [...messages, { role: 'user', content: 'PS: be nice' }] },
    })
    await agent.run('hi')
    expect(provider.requests[0]?.messages.map((m) => m.content)).toEqual(['hi', 'PS: be nice'])
  })
})

describe('beforeToolExecution', () => {
  const cases: [string, Hooks['beforeToolExecution'], string, boolean][] = [
    ['deny(reason)', () => deny('Blocked by policy: book tourist.'), 'Blocked by policy: book tourist.', true],
    ['respond(result)', () => respond('{"cached":true}'), '{"cached":true}', false],
    [
      'the seed shape { authorize: false, mockResult }',
      () => ({ authorize: false, mockResult: 'Blocked: first class needs a manager.' }),
      'Blocked: first class needs a manager.',
      true,
    ],
  ]
  it.each(cases)('%s: the tool never runs and the model reads the text', async (_name, hook, expected, isError) => {
    const t = recordingTool('t')
    const provider = oneCall()
    const agent = createAgent({ provider, tools: [t.tool], hooks: { beforeToolExecution: hook } })
    const events = recordEvents(agent)
    await agent.run('go')
    expect(t.calls).toEqual([])
    expect(toolResultIn(provider.requests[1]?.messages ?? [], 'c1')).toBe(expected)
    expect(eventsOf(events, 'tool.start')).toEqual([])
    expect(eventsOf(events, 'tool.end')[0]).toMatchObject({ output: expected, isError })
  })

  it.each([
    ['allow()', () => allow()],
    ['{ authorize: true }', () => ({ authorize: true })],
    ['nothing', () => undefined],
  ] as [string, Hooks['beforeToolExecution']][])('%s lets the tool run', async (_name, hook) => {
    const t = recordingTool('t', () => 'ran')
    const provider = oneCall()
    await createAgent({ provider, tools: [t.tool], hooks: { beforeToolExecution: hook } }).run('go')
    expect(t.calls).toEqual([{ x: 'a' }])
    expect(toolResultIn(provider.requests[1]?.messages ?? [], 'c1')).toBe('ran')
  })
})

describe('afterToolExecution', () => {
  it('rewrites what the model reads; tool.end carries the rewritten text, never the raw one', async () => {
    const t = recordingTool('t', () => 'Passenger DNI 12.345.678 booked on train 3')
    const provider = oneCall()
    const agent = createAgent({
      provider,
      tools: [t.tool],
      hooks: { afterToolExecution: ({ output }) => output.replace(/DNI [\d.]+/g, 'DNI ***') },
    })
    const events = recordEvents(agent)
    const result = await agent.run('go')
    expect(toolResultIn(provider.requests[1]?.messages ?? [], 'c1')).toBe('Passenger DNI *** booked on train 3')
    expect(eventsOf(events, 'tool.end')[0]?.output).toBe('Passenger DNI *** booked on train 3')
    expect(JSON.stringify(events)).not.toContain('12.345.678')
    expect(JSON.stringify(result.messages)).not.toContain('12.345.678')
  })

  it('can turn a result into an error with { output, isError }', async () => {
    const provider = oneCall()
    const agent = createAgent({
      provider,
      tools: [recordingTool('t').tool],
      hooks: { afterToolExecution: () => ({ output: 'too big, narrow the search', isError: true }) },
    })
    const events = recordEvents(agent)
    await agent.run('go')
    expect(eventsOf(events, 'tool.end')[0]).toMatchObject({ output: 'too big, narrow the search', isError: true })
  })
})

describe('several hook sets', () => {
  it('compose in order: rewrites chain, and a deny stops the chain', async () => {
    const order: string[] = []
    const t = recordingTool('t', () => 'x')
    const provider = oneCall()
    const agent = createAgent({
      provider,
      tools: [t.tool],
      hooks: [
        {
          beforeToolExecution: () => void order.push('first'),
          afterToolExecution: ({ output }) => `${output}1`,
        },
        {
          beforeToolExecution: () => {
            order.push('second')
            return deny('second says no')
          },
          afterToolExecution: ({ output }) => `${output}2`,
        },
        {
          beforeToolExecution: () => {
            order.push('third')
            return allow()
          },
        },
      ],
    })
    await agent.run('go')
    expect(order).toEqual(['first', 'second'])
    expect(t.calls).toEqual([])
    expect(toolResultIn(provider.requests[1]?.messages ?? [], 'c1')).toBe('second says no12')
  })
})

describe('a hook that throws', () => {
  it.each(['beforeTurn', 'beforeProviderCall', 'beforeToolExecution', 'afterToolExecution', 'afterTurn'] as const)(
    '%s fails the run with HOOK_FAILED naming the point and cause',
    async (point) => {
      const t = recordingTool('t')
      const provider = oneCall()
      const agent = createAgent({
        provider,
        tools: [t.tool],
        hooks: {
          [point]: async () => {
            throw new Error('budget service down')
          },
        },
      })
      const events = recordEvents(agent)
      const error = await runFailure(agent.run('go'))
      expect(error.code).toBe('HOOK_FAILED')
      expect(error.message).toContain(point)
      expect(error.message).toContain('budget service down')
      expect(error.result.status).toBe('failed')
      expect(error.result.stopReason).toBe('hook_error')
      expect(eventsOf(events, 'run.error')[0]?.error.code).toBe('HOOK_FAILED')
      // Fail closed: a throw before the tool means it never ran.
      if (point !== 'afterToolExecution' && point !== 'afterTurn') expect(t.calls).toEqual([])
    },
  )

  it('returning something the loop cannot use is a HookError too', async () => {
    const t = recordingTool('t')
    const agent = createAgent({ provider: oneCall(), tools: [t.tool], hooks: { beforeToolExecution: () => 'yes' as never } })
    const error = await runFailure(agent.run('go'))
    expect(error.code).toBe('HOOK_FAILED')
    expect(error.message).toContain('beforeToolExecution')
    expect(t.calls).toEqual([])
    expect(new HookError('afterTurn', new Error('x')).hookPoint).toBe('afterTurn')
  })
})

describe('beforeTurn', () => {
  it('{ stop, reason } ends the run as cancelled, before the model is called', async () => {
    const provider = oneCall()
    const agent = createAgent({
      provider,
      tools: [recordingTool('t').tool],
      hooks: { beforeTurn: ({ turn }) => (turn === 2 ? { stop: true, reason: 'budget spent' } : undefined) },
    })
    const error = await runFailure(agent.run('go'))
    expect(error).toBeInstanceOf(RunFailedError)
    expect(error.code).toBe('RUN_CANCELLED')
    expect(error.message).toContain('budget spent')
    expect(error.result.status).toBe('cancelled')
    expect(error.result.stopReason).toBe('hook_stop')
    expect(provider.requests).toHaveLength(1)
  })
})

describe('hook signals', () => {
  it('a hook gets an AbortSignal that aborts when the run is cancelled', async () => {
    const started = deferred<AbortSignal>()
    const agent = createAgent({
      provider: oneCall(),
      tools: [recordingTool('t').tool],
      clock: new SimulatedClock(),
      hooks: {
        beforeToolExecution: ({ signal }) => {
          started.resolve(signal)
          return new Promise(() => {})
        },
      },
    })
    const handle = agent.start('go')
    const signal = await started.promise
    expect(signal.aborted).toBe(false)
    agent.cancel('stop now')
    expect(signal.aborted).toBe(true)
    const error = await runFailure(handle.result)
    expect(error.code).toBe('RUN_CANCELLED')
    await waitFor(handle.actor, (s) => s.status === 'done')
  })
})
