/**
 * `signalbox cancel` of a stored run waiting for a person, after the process that asked died and
 * another resumed it (the shared NATS server, a private prefix): the pending approval request, or
 * the pending question, is withdrawn at once (`approval.withdrawn` / `question.withdrawn`, by the
 * canceller), so reviewers and answerers drop it instead of showing it until its deadline. A
 * process that dies withdraws nothing: the resumed run waits for the same request.
 */
import { serveAnswerer, serveReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { createSubjects } from '@signalbox/core/bus'
import type { ScriptedModelServer } from '@signalbox/core/testing'
import { startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { busArgs, cleanupAll, deleteStream, NATS_URL, runCli } from '../cli/support.ts'
import { uniquePrefix } from '../support/env.ts'
import { clawChild, type DurableDir, durableDir } from './support.ts'

interface Withdrawal {
  id: string
  reason: string
  by?: string
}

/** Waits for `check` to hold, polling what the services recorded (no fixed sleep). */
async function until<T>(check: () => T | undefined, what: string, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs
  for (;;) {
    const value = check()
    if (value !== undefined) return value
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('cancelling a stored run withdraws what a person is deciding for it', { timeout: 120_000 }, () => {
  let dir: DurableDir | undefined
  let server: ScriptedModelServer | undefined
  let prefix: string | undefined
  let bus: NatsBus | undefined
  const closers: (() => void)[] = []
  afterEach(async () => {
    for (const close of closers.splice(0)) close()
    await cleanupAll()
    await bus?.close()
    await server?.close()
    await dir?.remove()
    if (prefix) await deleteStream(prefix)
  })

  async function setUp(toolCall: { id: string; name: string; arguments: Record<string, unknown> }) {
    dir = await durableDir()
    prefix = uniquePrefix()
    server = await startScriptedModelServer({ scripts: { claw: [{ toolCalls: [toolCall] }] } })
    bus = await connectNatsBus({ servers: NATS_URL, name: 'people', prefix, durable: { storage: 'memory' } })
    return { dir, server, prefix, bus, nats: { url: NATS_URL, prefix } }
  }

  it('an approval request: withdrawn by the canceller when the resumed run is cancelled, not when its first process died', async () => {
    const s = await setUp({ id: 'call_drop', name: 'drop_claw', arguments: { prize: 'whale' } })
    const shown: string[] = []
    const withdrawn: Withdrawal[] = []
    const reviewer = serveReviewer({
      bus: s.bus,
      subjects: createSubjects(s.prefix),
      reviewer: {
        review: (request, { signal }) =>
          new Promise((_, reject) => {
            shown.push(request.requestId)
            signal.addEventListener('abort', () => reject(signal.reason), { once: true })
          }),
      },
      onWithdrawn: (id, { reason, by }) => withdrawn.push({ id, reason, ...(by !== undefined ? { by } : {}) }),
    })
    closers.push(() => reviewer.close())
    await reviewer.ready

    const first = await clawChild(s.dir, s.server, 'start', 'run-c1', { nats: s.nats })
    const asked = (await first.next('approval.requested')).request as { requestId: string }
    await until(() => (shown.includes(asked.requestId) ? true : undefined), 'the request shown')
    await first.child.kill()

    const second = await clawChild(s.dir, s.server, 'resume', 'run-c1', { nats: s.nats })
    await second.next('started')
    const again = (await second.next('approval.requested')).request as { requestId: string }
    expect(again.requestId).toBe(asked.requestId)
    // The death of the first process withdrew nothing: the request is still there to decide.
    expect(withdrawn).toEqual([])

    const cancelled = await runCli([
      'cancel',
      'claw',
      '--run',
      'run-c1',
      '--reason',
      'wrong prize',
      '--as',
      'carol',
      ...busArgs(s.prefix),
    ])
    expect(cancelled.code, cancelled.output).toBe(0)
    await until(() => withdrawn[0], 'the withdrawal')
    expect(withdrawn).toEqual([{ id: asked.requestId, reason: 'the run was cancelled (wrong prize)', by: 'carol' }])
    expect(await second.next('result')).toMatchObject({ runId: 'run-c1', status: 'cancelled' })
    expect(s.dir.effectLines()).toEqual([])
  })

  it('a question: withdrawn by the canceller when the resumed run is cancelled', async () => {
    const s = await setUp({ id: 'call_ask', name: 'ask_human', arguments: { question: 'Which prize?' } })
    const shown: string[] = []
    const withdrawn: Withdrawal[] = []
    const answerer = serveAnswerer({
      bus: s.bus,
      subjects: createSubjects(s.prefix),
      answerer: {
        answer: (question, { signal }) =>
          new Promise((_, reject) => {
            shown.push(question.questionId)
            signal.addEventListener('abort', () => reject(signal.reason), { once: true })
          }),
      },
      onWithdrawn: (id, { reason, by }) => withdrawn.push({ id, reason, ...(by !== undefined ? { by } : {}) }),
    })
    closers.push(() => answerer.close())
    await answerer.ready

    const first = await clawChild(s.dir, s.server, 'start', 'run-q1', { nats: s.nats })
    const asked = (await first.next('question.asked')).question as { questionId: string }
    await until(() => (shown.includes(asked.questionId) ? true : undefined), 'the question shown')
    await first.child.kill()

    const second = await clawChild(s.dir, s.server, 'resume', 'run-q1', { nats: s.nats })
    await second.next('started')
    expect(((await second.next('question.asked')).question as { questionId: string }).questionId).toBe(asked.questionId)
    expect(withdrawn).toEqual([])

    const cancelled = await runCli([
      'cancel',
      'claw',
      '--run',
      'run-q1',
      '--reason',
      'never mind',
      '--as',
      'carol',
      ...busArgs(s.prefix),
    ])
    expect(cancelled.code, cancelled.output).toBe(0)
    await until(() => withdrawn[0], 'the withdrawal')
    expect(withdrawn).toEqual([{ id: asked.questionId, reason: 'the run was cancelled (never mind)', by: 'carol' }])
    expect(await second.next('result')).toMatchObject({ runId: 'run-q1', status: 'cancelled' })
  })
})
