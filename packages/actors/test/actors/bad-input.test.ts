/**
 * Scenario 9: bad input on every subject the actors listen on. Malformed JSON, wrong shapes,
 * schema-invalid, large-but-allowed invalid, oversized (refused by the sender's own bus) and
 * wrong-version messages get an `error` reply (request/reply subjects) or a `rejection` notice
 * on `<prefix>.errors.<component>`; every actor keeps serving valid messages afterwards.
 */

import { connectAgent, remoteAnswerer, sendControl, serveAnswerer, serveReviewer, serveTools } from '@signalbox/actors'
import { askHumanTool, createAgent, functionAnswerer, policyReviewer, tool } from '@signalbox/core'
import { type Bus, BusPayloadTooLargeError } from '@signalbox/core/bus'
import {
  type AnswerMessage,
  type ApprovalRequestMessage,
  ControlReplyMessage,
  callDigest,
  decodeMessage,
  ErrorMessage,
  type QuestionMessage,
  QuestionMessage as QuestionSchema,
  type SteerMessage,
  type ToolCallMessage,
  ToolDescriptionMessage,
  ToolResultMessage,
} from '@signalbox/core/protocol'
import { ScriptedProvider, type ScriptStep } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  type Deployment,
  deferred,
  deploy,
  eventually,
  LARGE,
  OVERSIZED,
  readByModel,
  recordEvents,
  TRANSPORTS,
  watchRejections,
  within,
} from './harness.ts'

interface BadCase {
  name: string
  payload: string | Uint8Array | object
  code: string
}

/**
 * The same kinds of bad input for every subject, built from one valid message:
 * `invalidField` breaks the schema, `largeField` makes a message under the bus limit but far over
 * the field's limit.
 */
function badCases(valid: Record<string, unknown>, invalidField: Record<string, unknown>, largeField: string): BadCase[] {
  return [
    { name: 'malformed JSON', payload: '{"v":1,"type":', code: 'PROTOCOL_INVALID_JSON' },
    { name: 'not UTF-8', payload: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]), code: 'PROTOCOL_INVALID_JSON' },
    { name: 'not an object', payload: '[1,2,3]', code: 'PROTOCOL_INVALID_MESSAGE' },
    { name: 'wrong version', payload: { ...valid, v: 2 }, code: 'PROTOCOL_UNSUPPORTED_VERSION' },
    { name: 'no version', payload: { ...valid, v: undefined }, code: 'PROTOCOL_UNSUPPORTED_VERSION' },
    { name: 'wrong type', payload: { ...valid, type: 'something.else' }, code: 'PROTOCOL_UNEXPECTED_TYPE' },
    { name: 'schema-invalid', payload: { ...valid, ...invalidField }, code: 'PROTOCOL_INVALID_MESSAGE' },
    { name: 'large but allowed, invalid field', payload: { ...valid, [largeField]: LARGE }, code: 'PROTOCOL_INVALID_MESSAGE' },
    // The type is quoted in the error: unbounded, the error itself would be too large to send.
    { name: 'large but allowed, invalid type', payload: { v: 1, type: LARGE }, code: 'PROTOCOL_UNEXPECTED_TYPE' },
  ]
}

const text = (payload: BadCase['payload']): string | Uint8Array =>
  typeof payload === 'string' || payload instanceof Uint8Array ? payload : JSON.stringify(payload)

/** Publishes every case durably (the subject is on the durable path), then the oversized one, which the bus refuses. */
async function publishDurably(bus: Bus, subject: string, cases: BadCase[], valid: object) {
  let n = 0
  for (const c of cases) await bus.durablePublish(subject, text(c.payload), { msgId: `bad-${++n}-${Date.now()}` })
  await expect(
    bus.durablePublish(subject, JSON.stringify({ ...valid, pad: OVERSIZED }), { msgId: 'oversized' }),
  ).rejects.toBeInstanceOf(BusPayloadTooLargeError)
}

/** Asserts the rejection notices of `component` carry exactly the expected codes, in order. */
async function expectRejections(
  rejections: Awaited<ReturnType<typeof watchRejections>>,
  component: string,
  codes: string[],
  subject: string,
) {
  const got = await rejections.waitFor(component, codes.length, 5_000)
  expect(got.map((r) => r.error.code)).toEqual(codes)
  expect(got.every((r) => r.subject === subject && r.error.message.length <= 4096 && r.sample.length <= 512)).toBe(true)
  expect(rejections.invalid).toEqual([])
}

/** Sends every case as a request and checks the typed error reply. */
async function expectErrorReplies(bus: Bus, subject: string, cases: BadCase[], valid: object) {
  for (const c of cases) {
    const reply = await bus.request(subject, text(c.payload), { timeoutMs: 3_000 })
    const decoded = decodeMessage(reply.data, ErrorMessage)
    expect(decoded.ok, `${c.name}: the reply is a valid "error" message`).toBe(true)
    if (decoded.ok) expect(decoded.value.error.code, c.name).toBe(c.code)
  }
  await expect(bus.request(subject, JSON.stringify({ ...valid, pad: OVERSIZED }), { timeoutMs: 3_000 })).rejects.toBeInstanceOf(
    BusPayloadTooLargeError,
  )
}

async function setup(transport: Parameters<typeof deploy>[0]) {
  const d = await deploy(transport)
  const attacker = await d.bus('attacker')
  const rejections = await watchRejections(attacker, d.subjects)
  return { d, attacker, rejections }
}

function noCrashes(d: Deployment) {
  expect(d.handlerErrors).toEqual([])
}

for (const transport of TRANSPORTS) {
  describe(`bad input on every subject (${transport.name})`, () => {
    it('approval requests to the reviewer service: rejected and recorded; the service goes on deciding', async () => {
      const { d, attacker, rejections } = await setup(transport)
      const bus = await d.bus('reviewer')
      const decided: string[] = []
      const service = serveReviewer({
        bus,
        subjects: d.subjects,
        reviewer: policyReviewer(() => true, { name: 'p' }),
        onDecision: (r) => decided.push(r.requestId),
      })
      d.defer(() => service.close())
      await service.ready

      const args = { to: 'bob', amount: 1 }
      const valid: ApprovalRequestMessage = {
        v: 1,
        type: 'approval.request',
        requestId: 'request_valid',
        agentId: 'payer',
        runId: 'run_1',
        runPath: [],
        callId: 'call_1',
        toolName: 'pay',
        arguments: args,
        digest: callDigest('pay', args),
        deadline: Date.now() + 10_000,
        requestedAt: Date.now(),
      }
      const cases = badCases({ ...valid }, { digest: 'md5:123' }, 'requestId')
      const subject = d.subjects.approvals('payer')
      await publishDurably(attacker, subject, cases, valid)
      await expectRejections(
        rejections,
        'reviewer',
        cases.map((c) => c.code),
        subject,
      )

      await attacker.durablePublish(subject, JSON.stringify(valid), { msgId: 'valid' })
      await eventually(() => decided.includes('request_valid'), 3_000, 'the valid request to be decided')
      expect(decided).toEqual(['request_valid'])
      noCrashes(d)
    })

    it('questions to the answer service: rejected and recorded; the service goes on answering', async () => {
      const { d, attacker, rejections } = await setup(transport)
      const bus = await d.bus('answerer')
      const answered: string[] = []
      const service = serveAnswerer({
        bus,
        subjects: d.subjects,
        answerer: functionAnswerer(() => 'yes'),
        onAnswer: (q) => answered.push(q.questionId),
      })
      d.defer(() => service.close())
      await service.ready

      const valid: QuestionMessage = {
        v: 1,
        type: 'question',
        questionId: 'question_valid',
        agentId: 'asker',
        runId: 'run_1',
        runPath: [],
        callId: 'call_1',
        question: 'Ok?',
        deadline: Date.now() + 10_000,
        askedAt: Date.now(),
      }
      const cases = badCases({ ...valid }, { question: '' }, 'question')
      const subject = d.subjects.ask('asker')
      await publishDurably(attacker, subject, cases, valid)
      await expectRejections(
        rejections,
        'answerer',
        cases.map((c) => c.code),
        subject,
      )

      await attacker.durablePublish(subject, JSON.stringify(valid), { msgId: 'valid' })
      await eventually(() => answered.includes('question_valid'), 3_000, 'the valid question to be answered')
      noCrashes(d)
    })

    it('answers to the agent: rejected and recorded; the valid answer still reaches the model', async () => {
      const { d, attacker, rejections } = await setup(transport)
      const bus = await d.bus('agent')
      const answerer = remoteAnswerer({ bus, subjects: d.subjects })
      d.defer(() => answerer.close())
      const provider = new ScriptedProvider({
        script: [
          { toolCalls: [{ id: 'call_ask', name: 'ask_human', arguments: { question: 'Which one?' } }] },
          { content: 'done' },
        ],
      })
      const agent = createAgent({ id: 'asker', provider, tools: [askHumanTool({ answerer, timeoutMs: 15_000 })] })
      const questions: QuestionMessage[] = []
      const watch = attacker.durableConsume(d.subjects.ask('asker'), (m) => {
        m.ack()
        const decoded = decodeMessage(m.data, QuestionSchema)
        if (decoded.ok) questions.push(decoded.value)
      })
      d.defer(() => watch.unsubscribe())
      await watch.ready

      const run = agent.run('ask')
      const question = await eventually(() => questions[0], 5_000, 'the question on the bus')
      const valid: AnswerMessage = {
        v: 1,
        type: 'answer',
        questionId: question.questionId,
        answer: 'The red one.',
        answeredBy: 'tina',
        answeredAt: Date.now(),
      }
      const cases = badCases({ ...valid }, { answeredBy: '' }, 'answer')
      const subject = d.subjects.answers('asker')
      await publishDurably(attacker, subject, cases, valid)
      await expectRejections(
        rejections,
        'agent-questions',
        cases.map((c) => c.code),
        subject,
      )

      await attacker.durablePublish(subject, JSON.stringify(valid), { msgId: 'valid' })
      const result = await run
      expect(readByModel(provider, 'call_ask')).toBe('The red one.')
      expect(result.output).toBe('done')
      noCrashes(d)
    })

    it('steering: rejected and recorded (including blank text and an unknown run); a valid correction still applies', async () => {
      const { d, attacker, rejections } = await setup(transport)
      const bus = await d.bus('agent')
      const released = deferred()
      const write = tool({ name: 'write', description: 'w', schema: z.object({}), execute: () => 'written' })
      const provider = new ScriptedProvider({
        script: async (_request, index): Promise<ScriptStep> => {
          if (index > 0) return { content: 'done' }
          await within(released.promise, 10_000, 'the valid correction')
          return { toolCalls: [{ id: 'call_w', name: 'write', arguments: {} }] }
        },
      })
      const agent = createAgent({ id: 'steered', provider, tools: [write] })
      const events = recordEvents(agent)
      agent.on('steering.queued', () => released.resolve())
      const connection = connectAgent(agent, { bus, subjects: d.subjects })
      d.defer(() => connection.close())
      await connection.ready

      const run = agent.run('write it')
      await events.next('model.request')
      const valid: SteerMessage = { v: 1, type: 'steer', steerId: 'steer_ok', text: 'Stop.', from: 'ops', sentAt: Date.now() }
      const cases: BadCase[] = [
        ...badCases({ ...valid, steerId: 'steer_bad' }, { from: 42 }, 'text'),
        { name: 'blank text', payload: { ...valid, steerId: 'steer_blank', text: '   ' }, code: 'PROTOCOL_INVALID_MESSAGE' },
        {
          name: 'unknown run',
          payload: { ...valid, steerId: 'steer_lost', runId: 'run_nope' },
          code: 'PROTOCOL_INVALID_MESSAGE',
        },
      ]
      const subject = d.subjects.steer('steered')
      await publishDurably(attacker, subject, cases, valid)
      const got = await rejections.waitFor('agent-steered', cases.length, 5_000)
      expect(got.map((r) => r.error.code)).toEqual(cases.map((c) => c.code))
      expect(got.at(-1)?.error.message).toMatch(/run run_nope is not active/)
      expect(events.of('steering.queued')).toEqual([])

      await attacker.durablePublish(subject, JSON.stringify(valid), { msgId: 'valid' })
      await run
      expect(readByModel(provider, 'call_w')).toBe('Cancelled. The person says: Stop.')
      noCrashes(d)
    })

    it('control requests: typed error replies (or a rejection when nobody can be told); status still works', async () => {
      const { d, attacker, rejections } = await setup(transport)
      const bus = await d.bus('agent')
      const agent = createAgent({ id: 'ctl', provider: new ScriptedProvider({ script: [{ content: 'x' }] }) })
      const connection = connectAgent(agent, { bus, subjects: d.subjects })
      d.defer(() => connection.close())
      await connection.ready

      const valid = { v: 1, type: 'control.cancel', runId: 'run_1', reason: 'r' }
      const cases = badCases(valid, { reason: 42 }, 'reason')
      const subject = d.subjects.control('ctl')
      await expectErrorReplies(attacker, subject, cases, valid)
      // Without a reply subject, the refusal is published as a rejection instead.
      attacker.publish(subject, '{"v":1,')
      await expectRejections(rejections, 'agent-ctl', ['PROTOCOL_INVALID_JSON'], subject)

      const status = await sendControl({
        bus: attacker,
        subjects: d.subjects,
        agentId: 'ctl',
        request: { type: 'control.status' },
      })
      expect(ControlReplyMessage.safeParse(status).success).toBe(true)
      expect(status.runs).toEqual([])
      noCrashes(d)
    })

    it('tool calls and describe requests: typed error replies; the host keeps serving', async () => {
      const { d, attacker } = await setup(transport)
      const bus = await d.bus('host')
      const echo = tool({
        name: 'echo',
        description: 'Echoes.',
        schema: z.object({ items: z.array(z.number()).max(5000) }),
        execute: ({ items }) => `echo ${items.length}`,
      })
      const host = serveTools({ bus, subjects: d.subjects, tools: [echo] })
      d.defer(() => host.close())
      await host.ready

      const valid: ToolCallMessage = {
        v: 1,
        type: 'tool.call',
        callId: 'call_1',
        toolName: 'echo',
        agentId: 'a',
        runId: 'run_1',
        arguments: { items: [1, 2, 3] },
        deadline: Date.now() + 10_000,
      }
      const subject = d.subjects.tool('echo')
      await expectErrorReplies(attacker, subject, badCases({ ...valid }, { callId: 42 }, 'callId'), valid)
      const ask = async (payload: object) => {
        const reply = await attacker.request(subject, JSON.stringify(payload), { timeoutMs: 3_000 })
        const decoded = decodeMessage(reply.data, z.discriminatedUnion('type', [ErrorMessage, ToolResultMessage]))
        if (!decoded.ok) throw decoded.error
        return decoded.value
      }
      expect(await ask({ ...valid, toolName: 'other' })).toMatchObject({
        type: 'error',
        error: { code: 'TOOL_UNKNOWN' },
        inReplyTo: 'call_1',
      })
      // Thousands of invalid items: the reply stays a valid, bounded error.
      const many = await ask({ ...valid, arguments: { items: Array.from({ length: 4000 }, (_, i) => `n${i}`) } })
      expect(many).toMatchObject({ type: 'error', error: { code: 'TOOL_INVALID_ARGUMENTS' }, inReplyTo: 'call_1' })
      expect(many.type === 'error' && many.error.message).toMatch(/and 3980 more/)
      // A deadline past what a timer can hold must not time the call out at once.
      expect(await ask({ ...valid, deadline: Number.MAX_SAFE_INTEGER })).toMatchObject({ type: 'tool.result', output: 'echo 3' })

      const describeSubject = d.subjects.toolDescribe('echo')
      const describeCases = badCases({ v: 1, type: 'tool.describe' }, {}, 'unused').filter(
        (c) => !/schema-invalid|invalid field/.test(c.name),
      )
      await expectErrorReplies(attacker, describeSubject, describeCases, { v: 1, type: 'tool.describe' })
      const description = await attacker.request(describeSubject, JSON.stringify({ v: 1, type: 'tool.describe' }), {
        timeoutMs: 3_000,
      })
      expect(decodeMessage(description.data, ToolDescriptionMessage).ok).toBe(true)

      expect(await ask(valid)).toEqual({ v: 1, type: 'tool.result', callId: 'call_1', output: 'echo 3' })
      noCrashes(d)
    })
  })
}
