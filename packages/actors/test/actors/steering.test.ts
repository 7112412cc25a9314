/**
 * Scenarios 4 and 5: steering and control over the bus. `connectAgent` puts the agent on the
 * bus; an operator in another actor uses `sendSteering` / `sendControl`.
 */

import { connectAgent, sendControl, sendSteering } from '@signalbox/actors'
import { type Agent, createAgent, RunFailedError } from '@signalbox/core'
import { encodeMessage, type SteerMessage } from '@signalbox/core/protocol'
import { type RecordedRequest, ScriptedProvider, type ScriptStep } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import {
  type Deferred,
  type Deployment,
  deferred,
  deploy,
  readByModel,
  recordEvents,
  recordingTool,
  TRANSPORTS,
  within,
} from './harness.ts'

async function connected(d: Deployment, agent: Agent) {
  const bus = await d.bus('agent')
  const connection = connectAgent(agent, { bus, subjects: d.subjects })
  d.defer(() => connection.close())
  await connection.ready
  return connection
}

/** The user text a request started from (each run gets its own). */
const inputOf = (request: RecordedRequest) => String(request.messages.find((m) => m.role === 'user')?.content ?? '')
const afterTools = (request: RecordedRequest) => request.messages.some((m) => m.role === 'tool')

for (const transport of TRANSPORTS) {
  describe(`steering over the bus (${transport.name})`, () => {
    it('a correction sent while the model thinks cancels the next tool call; the model reads it', async () => {
      const d = await deploy(transport)
      const write = recordingTool('write_file')
      const provider = new ScriptedProvider({
        script: [
          // The model "thinks" long enough for the correction to cross the bus.
          { delayMs: 600, toolCalls: [{ id: 'call_w1', name: 'write_file', arguments: { x: 'prod-bucket' } }] },
          { content: 'ok, staging it is' },
        ],
      })
      const agent = createAgent({ id: 'writer', provider, tools: [write.tool] })
      const events = recordEvents(agent)
      await connected(d, agent)
      const operator = await d.bus('operator')

      const handle = agent.start('upload the report')
      await events.next('model.request')
      await sendSteering({
        bus: operator,
        subjects: d.subjects,
        agentId: 'writer',
        text: 'Use the staging bucket.',
        from: 'ops-dana',
      })
      await events.next('steering.queued', undefined, 2_000)
      const result = await handle.result

      expect(result.output).toBe('ok, staging it is')
      expect(write.calls).toEqual([])
      expect(readByModel(provider, 'call_w1')).toBe('Cancelled. The person says: Use the staging bucket.')
      expect(events.of('steering.applied')).toMatchObject([
        { callId: 'call_w1', text: 'Use the staging bucket.', from: 'ops-dana' },
      ])
    })

    it('a correction delivered twice (same steerId) is applied once', async () => {
      const d = await deploy(transport)
      const write = recordingTool('write_file')
      const second = deferred()
      const provider = new ScriptedProvider({
        script: async (_request, index): Promise<ScriptStep> => {
          if (index > 0) return { content: 'done' }
          await within(second.promise, 5_000, 'the second correction')
          return { toolCalls: [{ id: 'call_w1', name: 'write_file', arguments: { x: 'a' } }] }
        },
      })
      const agent = createAgent({ id: 'writer', provider, tools: [write.tool] })
      const events = recordEvents(agent)
      agent.on('steering.queued', (event) => {
        if (event.text === 'second') second.resolve()
      })
      await connected(d, agent)
      const operator = await d.bus('operator')

      const handle = agent.start('write')
      await events.next('model.request')
      const first: SteerMessage = { v: 1, type: 'steer', steerId: 'steer-dup', text: 'first', from: 'ops', sentAt: Date.now() }
      // A retried publish that escaped de-duplication (different msgId, same steerId).
      await operator.durablePublish(d.subjects.steer('writer'), encodeMessage(first), { msgId: 'attempt-1' })
      await operator.durablePublish(d.subjects.steer('writer'), encodeMessage(first), { msgId: 'attempt-2' })
      await sendSteering({ bus: operator, subjects: d.subjects, agentId: 'writer', text: 'second', from: 'ops' })
      const result = await handle.result

      expect(result.output).toBe('done')
      expect(events.of('steering.queued').map((e) => e.text)).toEqual(['first', 'second'])
      expect(readByModel(provider, 'call_w1')).toBe('Cancelled. The person says: first\nsecond')
      expect(d.handlerErrors).toEqual([])
    })

    it('a correction aimed at one runId reaches only that run', async () => {
      const d = await deploy(transport)
      const write = recordingTool('write_file')
      const queued = deferred()
      const provider = new ScriptedProvider({
        script: async (request): Promise<ScriptStep> => {
          const input = inputOf(request)
          if (afterTools(request)) return { content: `${input}: done` }
          // Both runs think until the correction has reached run two (and had time to reach run one).
          await within(queued.promise, 5_000, 'the targeted correction')
          await new Promise((resolve) => setTimeout(resolve, 100))
          return { toolCalls: [{ id: `call_${input}`, name: 'write_file', arguments: { x: input } }] }
        },
      })
      const agent = createAgent({ id: 'writer', provider, tools: [write.tool] })
      const events = recordEvents(agent)
      await connected(d, agent)
      const operator = await d.bus('operator')

      const one = agent.start('one')
      const two = agent.start('two')
      agent.on('steering.queued', (event) => {
        if (event.runId === two.runId) queued.resolve()
      })
      await events.next('model.request', (e) => e.runId === two.runId)
      await sendSteering({
        bus: operator,
        subjects: d.subjects,
        agentId: 'writer',
        runId: two.runId,
        text: 'Not that file.',
        from: 'ops',
      })
      const [resultOne, resultTwo] = await Promise.all([one.result, two.result])

      expect(resultOne.output).toBe('one: done')
      expect(resultTwo.output).toBe('two: done')
      expect(write.calls).toEqual([{ x: 'one' }])
      expect(readByModel(provider, 'call_one')).toBe('write_file one ok')
      expect(readByModel(provider, 'call_two')).toBe('Cancelled. The person says: Not that file.')
      expect(events.of('steering.queued').map((e) => e.runId)).toEqual([two.runId])
    })
  })

  describe(`control over the bus (${transport.name})`, () => {
    /** One run per input; each run's first model call waits until its gate opens. */
    function gatedAgent() {
      const gates = new Map<string, Deferred<void>>()
      const gate = (input: string) => {
        const g = gates.get(input) ?? deferred()
        gates.set(input, g)
        return g
      }
      const provider = new ScriptedProvider({
        script: async (request, _index): Promise<ScriptStep> => {
          await gate(inputOf(request)).promise
          return { content: `${inputOf(request)}: done` }
        },
      })
      const agent = createAgent({ id: 'worker', provider })
      return { agent, open: (input: string) => gate(input).resolve(), events: recordEvents(agent) }
    }

    it('control.status lists the runs in flight with their state', async () => {
      const d = await deploy(transport)
      const s = gatedAgent()
      await connected(d, s.agent)
      const operator = await d.bus('operator')

      const one = s.agent.start('one')
      const two = s.agent.start('two')
      await s.events.next('model.request', (e) => e.runId === two.runId)
      const status = await sendControl({
        bus: operator,
        subjects: d.subjects,
        agentId: 'worker',
        request: { type: 'control.status' },
      })

      expect(status.agentId).toBe('worker')
      expect(status.cancelled).toBeUndefined()
      expect(status.runs.map((r) => r.runId).sort()).toEqual([one.runId, two.runId].sort())
      for (const run of status.runs) {
        expect(run.state).toMatch(/callingModel|model/i)
        expect(run.turn).toBe(1)
      }

      s.open('one')
      s.open('two')
      await Promise.all([one.result, two.result])
      const after = await sendControl({
        bus: operator,
        subjects: d.subjects,
        agentId: 'worker',
        request: { type: 'control.status' },
      })
      expect(after.runs).toEqual([])
    })

    it('control.cancel cancels one run by id, or every run', async () => {
      const d = await deploy(transport)
      const s = gatedAgent()
      await connected(d, s.agent)
      const operator = await d.bus('operator')

      const one = s.agent.start('one')
      const two = s.agent.start('two')
      const three = s.agent.start('three')
      // The runs end inside the control handler, before the reply reaches the test: observe them now.
      const failureOf = (handle: typeof one) =>
        handle.result.then(
          () => undefined,
          (error: unknown) => error,
        )
      const [oneEnds, twoEnds, threeEnds] = [failureOf(one), failureOf(two), failureOf(three)]
      await s.events.next('model.request', (e) => e.runId === three.runId)

      const targeted = await sendControl({
        bus: operator,
        subjects: d.subjects,
        agentId: 'worker',
        request: { type: 'control.cancel', runId: two.runId, reason: 'wrong customer', from: 'ops' },
      })
      expect(targeted.cancelled).toEqual([two.runId])
      const failure = await twoEnds
      expect(failure).toBeInstanceOf(RunFailedError)
      expect((failure as RunFailedError).result.status).toBe('cancelled')
      expect((failure as RunFailedError).message).toMatch(/wrong customer/)

      const all = await sendControl({
        bus: operator,
        subjects: d.subjects,
        agentId: 'worker',
        request: { type: 'control.cancel', from: 'ops' },
      })
      expect([...(all.cancelled ?? [])].sort()).toEqual([one.runId, three.runId].sort())
      expect(await oneEnds).toBeInstanceOf(RunFailedError)
      expect(await threeEnds).toBeInstanceOf(RunFailedError)
      expect(s.agent.runs.size).toBe(0)
    })

    it('an agent on two hosts: status lists the runs of both, a cancel reports the run wherever it lives', async () => {
      const d = await deploy(transport)
      const [a, b] = [gatedAgent(), gatedAgent()]
      await connected(d, a.agent)
      await connected(d, b.agent)
      const operator = await d.bus('operator')
      const onA = a.agent.start('on a')
      const onB = b.agent.start('on b')
      const ends = [onA, onB].map((handle) =>
        handle.result.then(
          () => 'done',
          () => 'failed',
        ),
      )
      await a.events.next('model.request', (e) => e.runId === onA.runId)
      await b.events.next('model.request', (e) => e.runId === onB.runId)
      const ask = (request: Parameters<typeof sendControl>[0]['request']) =>
        sendControl({ bus: operator, subjects: d.subjects, agentId: 'worker', request })

      const status = await ask({ type: 'control.status' })
      expect(status.runs.map((r) => r.runId).sort()).toEqual([onA.runId, onB.runId].sort())
      // Each host cancels what it holds; the reply says so whichever answered first.
      expect((await ask({ type: 'control.cancel', runId: onB.runId, from: 'ops' })).cancelled).toEqual([onB.runId])
      expect((await ask({ type: 'control.cancel', runId: onA.runId, from: 'ops' })).cancelled).toEqual([onA.runId])
      expect(await Promise.all(ends)).toEqual(['failed', 'failed'])
      expect((await ask({ type: 'control.status' })).runs).toEqual([])
    })
  })
}
