/**
 * A durable run killed (SIGKILL) while its `ask_human` question waits for a person. The resumed
 * run re-attaches to the SAME question (same id, same absolute deadline) instead of treating the
 * call as an outcome-unknown tool call: an answer given while no process ran is applied (over
 * NATS, the answers are replayed), one stored in time is applied even after the deadline, and a
 * deadline that passed with no answer is a timeout by `system` that the model reads.
 */
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import type { Question } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { type AnswerMessage, encodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { clawChild, type DurableDir, durableDir, readsTool, resumeToEnd, untilPast } from './support.ts'

const ASK = { toolCalls: [{ id: 'call_ask', name: 'ask_human', arguments: { question: 'Which prize?' } }] }

describe('durable runs: killed while a question waits for a person', { timeout: 120_000 }, () => {
  let dir: DurableDir | undefined
  let server: ScriptedModelServer | undefined
  let bus: NatsBus | undefined
  afterEach(async () => {
    await bus?.close()
    await server?.close()
    await dir?.remove()
  })

  async function answerWhileDown(prefix: string, question: Question, answer: string, by: string): Promise<void> {
    bus = await connectNatsBus({ servers: NATS_URL, name: 'answerer', prefix, durable: { storage: 'memory' } })
    const message: AnswerMessage = {
      v: PROTOCOL_VERSION,
      type: 'answer',
      questionId: question.questionId,
      answer,
      answeredBy: by,
      answeredAt: Date.now(),
    }
    await bus.durablePublish(createSubjects(prefix).answers('claw'), encodeMessage(message), {
      msgId: `answer-${question.questionId}`,
    })
  }

  it('an answer given while the agent is down is applied to the same question on resume (NATS)', async () => {
    dir = await durableDir()
    const prefix = uniquePrefix()
    server = await startScriptedModelServer({
      scripts: {
        claw: [ASK, { content: 'The duck it is.', ...readsTool((c) => c === 'the duck', 'the model should read the answer') }],
      },
    })
    const nats = { url: NATS_URL, prefix }
    const first = await clawChild(dir, server, 'start', 'run-q1', { nats })
    const asked = (await first.next('question.asked')).question as Question
    await first.child.kill()
    await answerWhileDown(prefix, asked, 'the duck', 'bob')

    const { result, child: second } = await resumeToEnd(dir, server, 'run-q1', { nats })
    expect(result).toMatchObject({ status: 'done', output: 'The duck it is.' })
    // Re-attached: the same question, not a new one.
    expect((await second.next('question.asked')).question).toEqual(asked)
    expect(second.lines().find((l) => l.type === 'tool.end')).toMatchObject({ callId: 'call_ask', outcome: 'executed' })
    const audit = dir.auditEntries()
    expect(audit.map((e) => [e.kind, e.actor, e.decision])).toEqual([['question.answered', 'bob', 'the duck']])
    expect(audit[0]).toMatchObject({ runId: 'run-q1', callId: 'call_ask', shown: 'Which prize?', requestedAt: asked.askedAt })
    server.assertDone()
  })

  it('an answer stored in time while the agent is down counts after the deadline too (NATS)', async () => {
    dir = await durableDir()
    const prefix = uniquePrefix()
    server = await startScriptedModelServer({
      scripts: {
        claw: [ASK, { content: 'The seal, then.', ...readsTool((c) => c === 'the seal', 'the model should read the answer') }],
      },
    })
    const nats = { url: NATS_URL, prefix }
    const first = await clawChild(dir, server, 'start', 'run-q2', { nats, questionTimeoutMs: 4_000 })
    const asked = (await first.next('question.asked')).question as Question
    await first.child.kill()
    await answerWhileDown(prefix, asked, 'the seal', 'carol')
    expect(Date.now()).toBeLessThan(asked.deadline) // else this run proves nothing: the machine was too slow
    await untilPast(asked.deadline)

    const { result } = await resumeToEnd(dir, server, 'run-q2', { nats })
    expect(result).toMatchObject({ status: 'done', output: 'The seal, then.' })
    expect(dir.auditEntries().map((e) => [e.kind, e.actor, e.decision])).toEqual([['question.answered', 'carol', 'the seal']])
    server.assertDone()
  })

  it('the deadline passed while no process ran and nobody answered: a timeout by system, the model is told', async () => {
    dir = await durableDir()
    server = await startScriptedModelServer({
      scripts: {
        claw: [
          ASK,
          {
            content: 'I will wait.',
            ...readsTool((c) => c.startsWith('No answer from the person'), 'the model should read the timeout'),
          },
        ],
      },
    })
    const first = await clawChild(dir, server, 'start', 'run-q3', { questionTimeoutMs: 3_000 })
    const asked = (await first.next('question.asked')).question as Question
    await first.child.kill()
    await untilPast(asked.deadline)

    // This answerer would answer at once: it must not be asked, the deadline has passed.
    const { result, child: second } = await resumeToEnd(dir, server, 'run-q3', { answer: 'too late' })
    expect(result).toMatchObject({ status: 'done', output: 'I will wait.' })
    expect(second.lines().filter((l) => l.type === 'question.asked')).toEqual([])
    expect(dir.auditEntries().map((e) => [e.kind, e.actor, e.decision])).toEqual([['question.timeout', 'system', 'timeout']])
    expect(dir.auditEntries()[0]).toMatchObject({ runId: 'run-q3', callId: 'call_ask', requestedAt: asked.askedAt })
    server.assertDone()
  })
})
