/**
 * `signalbox review` as a trusted reviewer, over real NATS: with `--nkey` it signs its decisions,
 * with `--agent-key` it shows only requests the agent signed (marked verified), and even with
 * `--auto approve` it refuses (denies, saying why) a request whose digest does not match its
 * arguments, and a request with arguments nested 100,000 deep, once, instead of looping. With
 * `--trust FILE` (the agents' policy format), a forged answer or decision does not make it drop
 * the question or request it is showing: only the policy's answerers and reviewers settle one
 * elsewhere.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { connectNatsBus } from '@signalbox/actors/nats'
import { createSigner, createTrustPolicy, newUserSeed } from '@signalbox/actors/trust'
import { createSubjects } from '@signalbox/core/bus'
import {
  AnswerMessage,
  ApprovalDecisionMessage,
  type ApprovalRequestMessage,
  callDigest,
  decodeMessage,
  type QuestionMessage,
} from '@signalbox/core/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { uniquePrefix } from '../support/env.ts'
import { busArgs, cleanupAll, deleteStream, NATS_URL, startProcess, until } from './support.ts'

let prefix = ''
let tmp: string | undefined
afterEach(async () => {
  await cleanupAll()
  if (prefix) await deleteStream(prefix)
  if (tmp) await rm(tmp, { recursive: true, force: true })
})

describe('signalbox review with keys', () => {
  it('signs decisions, shows only signed requests, and refuses a mismatched digest and deep arguments once', async () => {
    prefix = uniquePrefix()
    tmp = await mkdtemp(path.join(os.tmpdir(), 'signalbox-review-trust-'))
    const reviewerSeed = newUserSeed()
    const reviewerKey = createSigner(reviewerSeed)
    const agentKey = createSigner(newUserSeed())
    const seedFile = path.join(tmp, 'tina.nk')
    await writeFile(seedFile, reviewerSeed)
    const subjects = createSubjects(prefix)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix })
    try {
      const decisions: ApprovalDecisionMessage[] = []
      const watch = bus.durableConsume(subjects.approvalDecisions('claw'), (message) => {
        message.ack()
        const decoded = decodeMessage(message.data, ApprovalDecisionMessage)
        if (decoded.ok) decisions.push(decoded.value)
      })
      await watch.ready

      const reviewer = startProcess(
        [
          'review',
          '--auto',
          'approve',
          '--name',
          'tina',
          '--nkey',
          seedFile,
          '--agent-key',
          agentKey.publicKey,
          ...busArgs(prefix),
        ],
        { name: 'review' },
      )
      await reviewer.waitFor('reviewing approval requests')

      const now = Date.now()
      const request = (n: number, args: unknown): ApprovalRequestMessage => ({
        v: 1,
        type: 'approval.request',
        requestId: `request_${n}`,
        agentId: 'claw',
        runId: 'run_1',
        runPath: [],
        callId: `call_${n}`,
        toolName: 'drop_claw',
        arguments: args,
        digest: callDigest('drop_claw', args),
        deadline: now + 60_000,
        requestedAt: now,
      })
      const send = (message: ApprovalRequestMessage | string, id: string) =>
        bus.durablePublish(subjects.approvals('claw'), typeof message === 'string' ? message : JSON.stringify(message), {
          msgId: id,
        })

      // 1. The digest is of other arguments than those shown.
      await send(agentKey.sign({ ...request(1, { bin: 3 }), digest: callDigest('drop_claw', { bin: 4 }) }), 'r1')
      // 2. Arguments nested 100,000 deep (written by hand: JSON.stringify would overflow the stack here).
      const deep = agentKey.sign({ ...request(2, null), digest: callDigest('drop_claw', { deep: true }) })
      const depth = 100_000
      await send(JSON.stringify(deep).replace('"arguments":null', `"arguments":${'['.repeat(depth)}${']'.repeat(depth)}`), 'r2')
      // 3. Not signed by the agent: never shown, never decided.
      await send(request(3, { bin: 1 }), 'r3')
      // 4. A real request.
      await send(agentKey.sign(request(4, { bin: 2 })), 'r4')

      await until(() => decisions.some((d) => d.requestId === 'request_4'), 'the decision on the real request')
      await until(() => decisions.some((d) => d.requestId === 'request_1'), 'the refusal of the mismatched digest')
      // Long enough for a retried refusal (the service retries failures after 1 s) to show up.
      await new Promise((resolve) => setTimeout(resolve, 2_500))

      const byRequest = (id: string) => decisions.filter((d) => d.requestId === id)
      expect(byRequest('request_4')).toMatchObject([{ approved: true, reviewer: 'tina', signer: reviewerKey.publicKey }])
      expect(byRequest('request_1')).toMatchObject([{ approved: false }])
      expect(byRequest('request_1')[0]?.reason).toContain('the digest does not match the arguments shown')
      // Nested past the protocol's depth limit: the wire decoder drops it once (docs/protocol.md), so
      // it never reaches the person and nothing is decided on it.
      expect(byRequest('request_2')).toEqual([])
      expect(byRequest('request_3')).toEqual([])
      // Every decision is signed by the reviewer's key and verifies.
      const policy = createTrustPolicy({ keys: { [reviewerKey.publicKey]: 'tina' }, reviewers: [reviewerKey.publicKey] })
      for (const decision of decisions) expect(policy.check(decision, { toolName: 'drop_claw' })).toMatchObject({ ok: true })
      // Shown as verified; the unsigned request and the refusals are said once each, not looped.
      expect(reviewer.stdout).toContain(`verified: signed by agent key 1 (${agentKey.publicKey})`)
      expect(reviewer.stdout).not.toContain('"bin": 1')
      expect(reviewer.stderr.match(/refused drop_claw \(call_2/g)).toBeNull()
      expect(reviewer.stderr.match(/refused drop_claw \(call_3/g)).toHaveLength(1)
      expect(reviewer.stderr).not.toContain('Maximum call stack size exceeded\n'.repeat(2))
      expect(await reviewer.stop('SIGTERM')).toBe(0)
    } finally {
      await bus.close()
    }
  })
})

describe('signalbox review --trust', () => {
  it('keeps showing a question and a request after a forged answer and decision; the policy’s answerer and reviewer settle others', async () => {
    prefix = uniquePrefix()
    tmp = await mkdtemp(path.join(os.tmpdir(), 'signalbox-review-trust-'))
    const tinaSeed = newUserSeed()
    const tina = createSigner(tinaSeed)
    const bob = createSigner(newUserSeed())
    const mallory = createSigner(newUserSeed())
    const seedFile = path.join(tmp, 'tina.nk')
    const trustFile = path.join(tmp, 'trust.json')
    await writeFile(seedFile, tinaSeed)
    // The agents' own policy file: who may answer and approve. No "agents": requests are not checked.
    const both = [tina.publicKey, bob.publicKey]
    await writeFile(
      trustFile,
      JSON.stringify({ keys: { [tina.publicKey]: 'tina', [bob.publicKey]: 'bob' }, reviewers: both, answerers: both }),
    )
    const subjects = createSubjects(prefix)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix })
    try {
      const answers: AnswerMessage[] = []
      const decisions: ApprovalDecisionMessage[] = []
      const watches = [
        bus.durableConsume(subjects.answers('claw'), (message) => {
          message.ack()
          const decoded = decodeMessage(message.data, AnswerMessage)
          if (decoded.ok) answers.push(decoded.value)
        }),
        bus.durableConsume(subjects.approvalDecisions('claw'), (message) => {
          message.ack()
          const decoded = decodeMessage(message.data, ApprovalDecisionMessage)
          if (decoded.ok) decisions.push(decoded.value)
        }),
      ]
      await Promise.all(watches.map((watch) => watch.ready))

      const reviewer = startProcess(['review', '--name', 'tina', '--nkey', seedFile, '--trust', trustFile, ...busArgs(prefix)], {
        name: 'review',
        stdin: 'pipe',
      })
      await reviewer.waitFor('reviewing approval requests')
      expect(reviewer.output).toContain(`trust policy ${trustFile}: requests not checked; only its reviewers settle`)

      const now = Date.now()
      const question = (n: number): QuestionMessage => ({
        v: 1,
        type: 'question',
        questionId: `question_${n}`,
        agentId: 'claw',
        runId: 'run_1',
        runPath: [],
        callId: `ask_${n}`,
        question: `Which bin, ${n}?`,
        deadline: now + 60_000,
        askedAt: now,
      })
      const request = (n: number): ApprovalRequestMessage => ({
        v: 1,
        type: 'approval.request',
        requestId: `request_${n}`,
        agentId: 'claw',
        runId: 'run_1',
        runPath: [],
        callId: `call_${n}`,
        toolName: 'drop_claw',
        arguments: { bin: n },
        digest: callDigest('drop_claw', { bin: n }),
        deadline: now + 60_000,
        requestedAt: now,
      })
      const answer = (n: number, by: string): AnswerMessage => ({
        v: 1,
        type: 'answer',
        questionId: `question_${n}`,
        answer: `bin ${n}`,
        answeredBy: by,
        answeredAt: Date.now(),
      })
      const decision = (n: number, by: string): ApprovalDecisionMessage => ({
        v: 1,
        type: 'approval.decision',
        requestId: `request_${n}`,
        callId: `call_${n}`,
        digest: callDigest('drop_claw', { bin: n }),
        approved: true,
        reviewer: by,
        decidedAt: Date.now(),
      })
      const publish = (subject: string, message: object, id: string) =>
        bus.durablePublish(subject, JSON.stringify(message), { msgId: id })

      await publish(subjects.ask('claw'), question(1), 'q1')
      await reviewer.waitFor('Which bin, 1?')
      // Queued behind the question being asked.
      await publish(subjects.approvals('claw'), request(1), 'r1')
      await publish(subjects.ask('claw'), question(2), 'q2')
      await publish(subjects.approvals('claw'), request(2), 'r2')
      // Anyone on the bus: an unsigned answer "by tina", a decision signed by a key the policy does not know.
      await publish(subjects.answers('claw'), answer(1, 'tina'), 'forged-a1')
      await publish(subjects.approvalDecisions('claw'), mallory.sign(decision(1, 'tina')), 'forged-d1')
      // Then bob, whom the policy allows, settles the others elsewhere (each after the forgery on its
      // subject), shown under the policy's name for his key, whatever name he writes.
      await publish(subjects.answers('claw'), bob.sign(answer(2, 'tina')), 'a2')
      await publish(subjects.approvalDecisions('claw'), bob.sign(decision(2, 'tina')), 'd2')
      await reviewer.waitFor('by bob (someone else)')
      await reviewer.waitFor('by bob (another reviewer)')
      // The forgeries settled nothing: question 1 is still asked here, request 1 still waits its turn.
      expect(reviewer.output).not.toContain('Which bin, 1?" by')
      expect(reviewer.output).not.toMatch(/call_1[^\n]*another reviewer/)

      reviewer.child.stdin?.write('bin 7\n')
      await reviewer.waitFor('Approve drop_claw?')
      reviewer.child.stdin?.write('y\n')
      await until(() => decisions.some((d) => d.requestId === 'request_1' && d.signer === tina.publicKey), 'tina’s decision')
      expect(answers.filter((a) => a.questionId === 'question_1' && a.signer === tina.publicKey)).toMatchObject([
        { answer: 'bin 7', answeredBy: 'tina' },
      ])
      expect(decisions.filter((d) => d.requestId === 'request_1' && d.signer === tina.publicKey)).toMatchObject([
        { approved: true, reviewer: 'tina' },
      ])
      // tina's key is the policy's: no warning about it.
      expect(reviewer.stderr).not.toContain('warning')
      expect(await reviewer.stop('SIGTERM')).toBe(0)
      for (const watch of watches) watch.unsubscribe()
    } finally {
      await bus.close()
    }
  })
})
