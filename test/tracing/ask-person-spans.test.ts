/**
 * A question asked again because the answer did not fit (`askPerson` with a check, as an MCP
 * elicitation does): the refused one's span ends `rejected`, the next one's `answered`.
 */
import { askPerson, createAgent, ScriptedAnswerer, tool } from '@signalbox/core'
import { traceAgent } from '@signalbox/otel'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { scriptedModel } from '../e2e/support/scripted.ts'
import { find, memoryTracing, parentOf, registerGlobally } from './spans.ts'

let unregister: (() => void) | undefined
afterEach(() => {
  unregister?.()
  unregister = undefined
})

describe('traceAgent: a question asked again', () => {
  it('ends the refused question’s span as rejected, under the same tool call', async () => {
    const tracing = memoryTracing()
    unregister = registerGlobally(tracing.provider)
    const answerer = new ScriptedAnswerer(['many', '4'], { name: 'tina' })
    const guests = tool({
      name: 'guests',
      description: 'Asks how many guests.',
      schema: z.object({}),
      execute: async (_args, context) => {
        const outcome = await askPerson(context, 'How many guests?', {
          answerer,
          timeoutMs: 10_000,
          toolName: 'guests',
          check: (answer) => (/^\d+$/.test(answer) ? undefined : 'a number, please'),
        })
        return outcome.answered ? outcome.answer.answer : 'no answer'
      },
    })
    const { provider } = await scriptedModel({
      '*': [{ toolCalls: [{ id: 'c1', name: 'guests', arguments: {} }] }, { content: 'ok' }],
    })
    const agent = createAgent({ provider: provider('m'), tools: [guests] })
    traceAgent(agent)
    await agent.run('book')
    const spans = tracing.spans()
    const questions = find(spans, 'signalbox.question')
    expect(questions.map((q) => q.attributes['signalbox.question.outcome'])).toEqual(['rejected', 'answered'])
    const [call] = find(spans, 'execute_tool guests')
    for (const question of questions) expect(parentOf(spans, question)).toBe(call)
    expect(answerer.questions[1]?.question).toContain('The answer "many" was not accepted: a number, please.')
  })
})
