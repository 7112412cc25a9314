import { createAgent, FatalToolError, handoff, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { runFailure } from './helpers.ts'

const transfer = tool({
  name: 'transfer',
  description: 'Hand over.',
  schema: z.object({}),
  execute: () => handoff('hotels', { reason: 'hotel question' }),
})

describe('tools returning handoff()', () => {
  it('end the run after the reply, with the history for the next agent and unanswered calls closed', async () => {
    const ran: string[] = []
    const other = tool({ name: 'other', description: 'Other.', schema: z.object({}), execute: () => ran.push('other') })
    const provider = new ScriptedProvider({
      script: [
        {
          toolCalls: [
            { id: 't', name: 'transfer', arguments: {} },
            { id: 'o', name: 'other', arguments: {} },
          ],
        },
      ],
    })
    const agent = createAgent({ provider, instructions: 'You plan trips.', tools: [transfer, other] })
    const result = await agent.run('I need a hotel')
    expect(result.stopReason).toBe('handoff')
    expect(result.handoff?.to).toBe('hotels')
    expect(result.handoff?.reason).toBe('hotel question')
    expect(ran).toEqual([])
    // The next agent brings its own instructions; every tool call of the reply has a result.
    expect(result.handoff?.messages.some((m) => m.role === 'system')).toBe(false)
    const results = result.handoff?.messages.filter((m) => m.role === 'tool') ?? []
    expect(results.map((m) => m.tool_call_id)).toEqual(['t', 'o'])
    expect(results[1]?.content).toMatch(/handed over to "hotels"/)
    provider.assertDone()
  })

  it('apply the filter the tool gave', async () => {
    const onlyUser = tool({
      name: 'transfer',
      description: 'Hand over.',
      schema: z.object({}),
      execute: () => handoff('hotels', { filter: (messages) => messages.filter((m) => m.role === 'user') }),
    })
    const provider = new ScriptedProvider({ script: [{ toolCalls: [{ name: 'transfer', arguments: {} }] }] })
    const result = await createAgent({ provider, tools: [onlyUser] }).run('hello')
    expect(result.handoff?.messages).toEqual([{ role: 'user', content: 'hello' }])
  })
})

describe('FatalToolError', () => {
  it('fails the run instead of reaching the model', async () => {
    const boom = tool({
      name: 'boom',
      description: 'Boom.',
      schema: z.object({}),
      execute: () => {
        throw new FatalToolError('CHILD_GAVE_UP', 'the child failed three times')
      },
    })
    const provider = new ScriptedProvider({ script: [{ toolCalls: [{ name: 'boom', arguments: {} }] }] })
    const error = await runFailure(createAgent({ provider, tools: [boom] }).run('go'))
    expect(error.code).toBe('CHILD_GAVE_UP')
    expect(error.result.stopReason).toBe('tool_fatal')
    expect(provider.requests).toHaveLength(1)
  })
})

describe('run budgets (options.maxTurns, options.maxTokens)', () => {
  const loop = () =>
    new ScriptedProvider({
      script: () => ({ toolCalls: [{ name: 'noop', arguments: {} }], usage: { promptTokens: 40, completionTokens: 10 } }),
    })
  const noop = tool({ name: 'noop', description: 'Nothing.', schema: z.object({}), execute: () => 'ok' })

  it('maxTurns lowers the agent limit for one run', async () => {
    const agent = createAgent({ provider: loop(), tools: [noop], maxTurns: 10 })
    const error = await runFailure(agent.run('go', { maxTurns: 2 }))
    expect(error.code).toBe('MAX_TURNS_EXCEEDED')
    expect(error.result.turns).toBe(2)
  })

  it('maxTokens stops the run before the turn that would go over', async () => {
    const agent = createAgent({ provider: loop(), tools: [noop], maxTurns: 10 })
    const error = await runFailure(agent.run('go', { maxTokens: 120 }))
    expect(error.code).toBe('BUDGET_EXCEEDED')
    expect(error.result.stopReason).toBe('max_tokens')
    expect(error.result.usage.totalTokens).toBe(150)
    expect(error.result.turns).toBe(3)
  })
})
