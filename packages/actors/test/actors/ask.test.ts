/**
 * Scenario 3: escalation over the bus. `askHumanTool` with a bus answerer; an answer service in
 * another actor answers. No answerer: a clear result at the timeout.
 */

import { remoteAnswerer, serveAnswerer } from '@signalbox/actors'
import { askHumanTool, createAgent, functionAnswerer, type Question } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { type Deployment, deploy, readByModel, recordEvents, TRANSPORTS, trackedAudit } from './harness.ts'

async function askingAgent(d: Deployment, timeoutMs: number) {
  const bus = await d.bus('agent')
  const answerer = remoteAnswerer({ bus, subjects: d.subjects })
  d.defer(() => answerer.close())
  const audit = trackedAudit()
  const provider = new ScriptedProvider({
    script: [
      { toolCalls: [{ id: 'call_ask_1', name: 'ask_human', arguments: { question: 'Which colour should the box be?' } }] },
      { content: 'done' },
    ],
  })
  const agent = createAgent({ id: 'asker', provider, tools: [askHumanTool({ answerer, timeoutMs })], audit: audit.log })
  return { agent, provider, audit, events: recordEvents(agent), read: () => readByModel(provider, 'call_ask_1') }
}

for (const transport of TRANSPORTS) {
  describe(`escalation over the bus (${transport.name})`, () => {
    it('a remote answer service answers; the model reads the answer', async () => {
      const d = await deploy(transport)
      const s = await askingAgent(d, 10_000)
      const serviceBus = await d.bus('answerer')
      const questions: Question[] = []
      const service = serveAnswerer({
        bus: serviceBus,
        subjects: d.subjects,
        answerer: functionAnswerer((question) => (question.question.includes('colour') ? 'Blue, please.' : '?'), {
          name: 'tina',
        }),
        onQuestion: (question) => questions.push(question),
      })
      d.defer(() => service.close())
      await service.ready

      const result = await s.agent.run('pack the box')

      expect(result.output).toBe('done')
      expect(s.read()).toBe('Blue, please.')
      expect(questions).toHaveLength(1)
      expect(questions[0]).toMatchObject({
        agentId: 'asker',
        runId: result.runId,
        callId: 'call_ask_1',
        question: 'Which colour should the box be?',
      })
      expect(s.events.of('question.answered')).toMatchObject([{ answer: 'Blue, please.', answeredBy: 'tina' }])
      expect(s.audit.of('question.answered')).toMatchObject([
        { actor: 'tina', decision: 'Blue, please.', shown: 'Which colour should the box be?' },
      ])
    })

    it('a restarted answer service does not ask again about a question already answered', async () => {
      const d = await deploy(transport)
      const s = await askingAgent(d, 20_000)
      const asked: string[] = []
      const start = async (name: string) => {
        const bus = await d.bus(name)
        const service = serveAnswerer({
          bus,
          subjects: d.subjects,
          answerer: functionAnswerer(
            (question) => {
              asked.push(`${name}: ${question.question}`)
              return `answer from ${name}`
            },
            { name },
          ),
        })
        d.defer(() => service.close())
        await service.ready
        return service
      }
      const first = await start('tina')
      await s.agent.run('pack the box')
      first.close()

      // Still before the question's deadline, and still in the log: a new instance replays it.
      await start('sam')
      await new Promise((resolve) => setTimeout(resolve, 300))
      expect(asked).toEqual(['tina: Which colour should the box be?'])
      expect(s.read()).toBe('answer from tina')
    })

    it('nobody answers: the model reads a clear "no answer" result at the timeout and the run goes on', async () => {
      const d = await deploy(transport)
      const s = await askingAgent(d, 300)

      const started = Date.now()
      const result = await s.agent.run('pack the box')

      expect(Date.now() - started).toBeGreaterThanOrEqual(280)
      expect(result.output).toBe('done')
      expect(s.read()).toMatch(/^No answer from the person within .+? to: "Which colour should the box be\?"/)
      expect(s.events.of('question.timeout')).toHaveLength(1)
      expect(s.audit.of('question.timeout')).toMatchObject([{ actor: 'system', decision: 'timeout' }])
    })
  })
}
