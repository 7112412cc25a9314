import {
  type Answerer,
  type AskHumanOptions,
  askHumanTool,
  createAgent,
  functionAnswerer,
  type MemoryAuditLog,
  type Question,
  ScriptedAnswerer,
} from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { SimulatedClock, waitFor } from 'xstate'
import { deferred, eventsOf, recordEvents, runFailure, toolResultIn } from './helpers.ts'

function setup(answerer: (clock: SimulatedClock) => Answerer, options: Partial<AskHumanOptions> = {}) {
  const clock = new SimulatedClock()
  clock.set(10_000)
  const provider = new ScriptedProvider({
    script: [
      { toolCalls: [{ id: 'q1', name: 'ask_kid', arguments: { question: 'The bear or the penguin?' } }] },
      { content: 'Going for it.' },
    ],
  })
  const ask = askHumanTool({ name: 'ask_kid', answerer: answerer(clock), timeoutMs: 30_000, ...options })
  const agent = createAgent({ provider, tools: [ask], clock })
  const events = recordEvents(agent)
  const audit = () => (agent.audit as MemoryAuditLog).entries
  const read = () => toolResultIn(provider.requests[1]?.messages ?? [], 'q1') ?? ''
  return { clock, agent, events, audit, read, provider }
}

describe('askHumanTool', () => {
  it('is an ordinary tool with a question argument', () => {
    const ask = askHumanTool({ answerer: new ScriptedAnswerer([]) })
    expect(ask.name).toBe('ask_human')
    expect(ask.parameters).toMatchObject({ type: 'object', properties: { question: { type: 'string' } }, required: ['question'] })
  })

  it('an answered question: the model reads the answer; asked/answered events and an audit entry', async () => {
    let answerer!: ScriptedAnswerer
    const s = setup((clock) => (answerer = new ScriptedAnswerer(['The penguin!'], { clock, name: 'tina' })))
    const result = await s.agent.run('Get me a prize')
    expect(result.output).toBe('Going for it.')
    expect(s.read()).toBe('The penguin!')
    expect(answerer.questions[0]).toMatchObject({
      question: 'The bear or the penguin?',
      callId: 'q1',
      deadline: 40_000,
      askedAt: 10_000,
    })
    const asked = eventsOf(s.events, 'question.asked')[0]
    expect(asked?.question).toMatchObject({ question: 'The bear or the penguin?', runId: result.runId })
    expect(eventsOf(s.events, 'question.answered')[0]).toMatchObject({ answer: 'The penguin!', answeredBy: 'tina', latencyMs: 0 })
    expect(s.audit()).toEqual([
      expect.objectContaining({
        kind: 'question.answered',
        actor: 'tina',
        callId: 'q1',
        toolName: 'ask_kid',
        shown: 'The bear or the penguin?',
        decision: 'The penguin!',
        requestedAt: 10_000,
        decidedAt: 10_000,
        latencyMs: 0,
      }),
    ])
  })

  it('records how long the person took', async () => {
    const answered = deferred<string>()
    const s = setup((clock) => functionAnswerer(() => answered.promise, { clock, name: 'tina' }))
    const handle = s.agent.start('go')
    await waitFor(handle.actor, () => eventsOf(s.events, 'question.asked').length > 0)
    s.clock.increment(4_000)
    answered.resolve('the bear')
    await handle.result
    expect(s.read()).toBe('the bear')
    expect(s.audit()[0]).toMatchObject({ latencyMs: 4_000, decidedAt: 14_000 })
  })

  it('no answer in time: a clear result for the model, a question.timeout event and an audit entry', async () => {
    const s = setup((clock) => new ScriptedAnswerer(['never'], { clock }))
    const handle = s.agent.start('go')
    await waitFor(handle.actor, () => eventsOf(s.events, 'question.asked').length > 0)
    s.clock.increment(29_999)
    expect(eventsOf(s.events, 'question.timeout')).toEqual([])
    s.clock.increment(1)
    const result = await handle.result
    expect(result.status).toBe('done')
    expect(s.read()).toMatch(/No answer from the person within 30s/)
    expect(s.read()).toContain('The bear or the penguin?')
    expect(eventsOf(s.events, 'question.timeout')).toHaveLength(1)
    expect(eventsOf(s.events, 'question.answered')).toEqual([])
    expect(s.audit()).toEqual([
      expect.objectContaining({
        kind: 'question.timeout',
        actor: 'system',
        decision: 'timeout',
        latencyMs: 30_000,
        decidedAt: 40_000,
      }),
    ])
  })

  it('times out even when the answerer ignores its signal', async () => {
    const s = setup(() => ({ answer: () => new Promise(() => {}) }))
    const handle = s.agent.start('go')
    await waitFor(handle.actor, () => eventsOf(s.events, 'question.asked').length > 0)
    s.clock.increment(30_000)
    await handle.result
    expect(s.read()).toMatch(/No answer from the person within 30s/)
    expect(eventsOf(s.events, 'question.timeout')).toHaveLength(1)
  })

  it('a custom noAnswerText is what the model reads on timeout', async () => {
    const s = setup((clock) => new ScriptedAnswerer(['never'], { clock }), {
      noAnswerText: (question, ms) => `Tina did not answer "${question}" in ${ms} ms.`,
    })
    const handle = s.agent.start('go')
    await waitFor(handle.actor, () => eventsOf(s.events, 'question.asked').length > 0)
    s.clock.increment(30_000)
    await handle.result
    expect(s.read()).toBe('Tina did not answer "The bear or the penguin?" in 30000 ms.')
  })

  it('an answerer that fails gives the model an error result; the run goes on', async () => {
    const s = setup(() => ({
      answer: async () => {
        throw new Error('chat service unreachable')
      },
    }))
    const result = await s.agent.run('go')
    expect(result.status).toBe('done')
    expect(s.read()).toContain('chat service unreachable')
    expect(eventsOf(s.events, 'tool.end')[0]).toMatchObject({ isError: true, outcome: 'failed' })
  })

  it('cancelling the run withdraws the question (the answerer signal aborts)', async () => {
    const seen = deferred<{ question: Question; signal: AbortSignal }>()
    const s = setup(() => ({
      answer: (question, { signal }) => {
        seen.resolve({ question, signal })
        return new Promise(() => {})
      },
    }))
    const handle = s.agent.start('go')
    const { signal } = await seen.promise
    handle.cancel('bye')
    expect(signal.aborted).toBe(true)
    expect((await runFailure(handle.result)).code).toBe('RUN_CANCELLED')
    expect(eventsOf(s.events, 'question.timeout')).toEqual([])
  })
})
