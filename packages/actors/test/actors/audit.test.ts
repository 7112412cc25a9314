/**
 * Scenario 8: the audit trail on the bus. `busAuditLog` is the agents' audit; an auditor in
 * another actor reads it back with `readAudit`, filtered by agent, run, tool or kind.
 */

import {
  busAuditLog,
  connectAgent,
  readAudit,
  remoteAnswerer,
  remoteReviewer,
  sendSteering,
  serveAnswerer,
  serveReviewer,
} from '@signalbox/actors'
import { createSigner, newUserSeed, signedAuditLog } from '@signalbox/actors/trust'
import { type AuditEntry, askHumanTool, createAgent, functionAnswerer, policyReviewer } from '@signalbox/core'
import { ScriptedProvider, type ScriptStep } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { deferred, deploy, payTool, recordEvents, TRANSPORTS, trackedAudit, within } from './harness.ts'

for (const transport of TRANSPORTS) {
  describe(`audit over the bus (${transport.name})`, () => {
    it('granted, denied, timeout, steering and answered entries are stored with who, what, decision, reason, times and latency; filters work', async () => {
      const d = await deploy(transport)
      const agentBus = await d.bus('agents')
      const audit = trackedAudit(busAuditLog({ bus: agentBus, subjects: d.subjects }))

      // Agent "teller": one payment granted, one denied, one question answered.
      const reviewer = remoteReviewer({ bus: agentBus, subjects: d.subjects, audit: audit.log })
      const answerer = remoteAnswerer({ bus: agentBus, subjects: d.subjects })
      d.defer(() => {
        reviewer.close()
        answerer.close()
      })
      const tellerPay = payTool()
      const teller = createAgent({
        id: 'teller',
        provider: new ScriptedProvider({
          script: [
            {
              toolCalls: [
                { id: 'call_small', name: 'pay', arguments: { to: 'ada', amount: 10 } },
                { id: 'call_big', name: 'pay', arguments: { to: 'bob', amount: 5_000 } },
                { id: 'call_ask', name: 'ask_human', arguments: { question: 'Send a receipt?' } },
              ],
            },
            { content: 'done' },
          ],
        }),
        tools: [tellerPay.tool, askHumanTool({ answerer, timeoutMs: 10_000 })],
        reviewer,
        audit: audit.log,
        approvalTimeoutMs: 10_000,
      })

      // Agent "refunder": nobody reviews its refunds (timeout), and a correction cancels a call.
      const steered = deferred()
      const refund = payTool('refund')
      const refunder = createAgent({
        id: 'refunder',
        provider: new ScriptedProvider({
          script: async (_request, index): Promise<ScriptStep> => {
            if (index === 0) return { toolCalls: [{ id: 'call_refund', name: 'refund', arguments: { to: 'cy', amount: 7 } }] }
            if (index > 1) return { content: 'done' }
            // The model "thinks" until the operator's correction has arrived.
            await within(steered.promise, 5_000, 'the correction')
            return { toolCalls: [{ id: 'call_refund_2', name: 'refund', arguments: { to: 'cy', amount: 8 } }] }
          },
        }),
        tools: [refund.tool],
        reviewer,
        audit: audit.log,
        approvalTimeoutMs: 300,
      })
      const refunderEvents = recordEvents(refunder)
      refunder.on('steering.queued', () => steered.resolve())
      const connection = connectAgent(refunder, { bus: agentBus, subjects: d.subjects, events: false })
      d.defer(() => connection.close())
      await connection.ready

      const staff = await d.bus('staff')
      const reviewers = serveReviewer({
        bus: staff,
        subjects: d.subjects,
        agentId: 'teller',
        reviewer: policyReviewer(
          (request) =>
            (request.arguments as { amount: number }).amount <= 100 ? true : { approved: false, reason: 'over the 100 limit' },
          { name: 'limits-policy' },
        ),
      })
      const answers = serveAnswerer({
        bus: staff,
        subjects: d.subjects,
        answerer: functionAnswerer(() => 'yes, by email', { name: 'tina' }),
      })
      d.defer(() => {
        reviewers.close()
        answers.close()
      })
      await Promise.all([reviewers.ready, answers.ready])

      const tellerResult = await teller.run('pay ada and bob')
      const refundRun = refunder.start('refund cy')
      // The first refund times out; the correction arrives before the second one.
      await refunderEvents.next('approval.timeout')
      await sendSteering({ bus: staff, subjects: d.subjects, agentId: 'refunder', text: 'Stop refunding cy.', from: 'ops-dana' })
      const refundResult = await refundRun.result
      expect([tellerResult.output, refundResult.output]).toEqual(['done', 'done'])
      expect(tellerPay.paid).toEqual([{ to: 'ada', amount: 10 }])
      expect(refund.paid).toEqual([])
      await audit.settled() // every write acknowledged by the durable store

      const auditor = await d.bus('auditor')
      const entries = await readAudit({ bus: auditor, subjects: d.subjects, idleMs: 300 })
      const byKind = (kind: AuditEntry['kind']) => entries.filter((e) => e.kind === kind)
      expect(entries.map((e) => e.kind).sort()).toEqual(
        ['approval.granted', 'approval.denied', 'question.answered', 'approval.timeout', 'steering.applied'].sort(),
      )
      expect(entries).toEqual(expect.arrayContaining(audit.entries))

      const [granted] = byKind('approval.granted')
      expect(granted).toMatchObject({
        agentId: 'teller',
        runId: tellerResult.runId,
        callId: 'call_small',
        toolName: 'pay',
        shown: { to: 'ada', amount: 10 },
        decision: 'approved',
        actor: 'limits-policy',
      })
      const [denied] = byKind('approval.denied')
      expect(denied).toMatchObject({
        callId: 'call_big',
        shown: { to: 'bob', amount: 5_000 },
        decision: 'denied',
        reason: 'over the 100 limit',
        actor: 'limits-policy',
      })
      const [answered] = byKind('question.answered')
      expect(answered).toMatchObject({ callId: 'call_ask', shown: 'Send a receipt?', decision: 'yes, by email', actor: 'tina' })
      const [timeout] = byKind('approval.timeout')
      expect(timeout).toMatchObject({
        agentId: 'refunder',
        runId: refundResult.runId,
        callId: 'call_refund',
        decision: 'timeout',
        actor: 'system',
      })
      expect(timeout?.latencyMs).toBeGreaterThanOrEqual(280)
      const [steering] = byKind('steering.applied')
      expect(steering).toMatchObject({
        agentId: 'refunder',
        callId: 'call_refund_2',
        decision: 'Stop refunding cy.',
        actor: 'ops-dana',
      })
      for (const entry of [granted, denied, answered, timeout, steering]) {
        expect(entry?.decidedAt).toBeGreaterThanOrEqual(entry?.requestedAt ?? Number.POSITIVE_INFINITY)
        expect(entry?.latencyMs).toBe((entry?.decidedAt ?? 0) - (entry?.requestedAt ?? 0))
      }

      const kinds = async (filter: Parameters<typeof readAudit>[0]['filter']) =>
        (await readAudit({ bus: auditor, subjects: d.subjects, filter, idleMs: 200 })).map((e) => e.kind).sort()
      expect(await kinds({ agentId: 'teller' })).toEqual(['approval.denied', 'approval.granted', 'question.answered'])
      expect(await kinds({ runId: refundResult.runId })).toEqual(['approval.timeout', 'steering.applied'])
      expect(await kinds({ toolName: 'pay' })).toEqual(['approval.denied', 'approval.granted'])
      expect(await kinds({ agentId: 'teller', kind: 'approval.denied' })).toEqual(['approval.denied'])
      expect(await kinds({ agentId: 'nobody' })).toEqual([])
    })

    it('a decision applied again by the host that took its run over is stored once; another decision, or the same under another key, is not', async () => {
      const d = await deploy(transport)
      // Two owners of one run, one after the other, signing with the agent's key; and a writer with another key.
      const agentSeed = newUserSeed()
      const seeds = [agentSeed, agentSeed, newUserSeed()]
      const logs = await Promise.all(
        seeds.map(async (seed, i) =>
          signedAuditLog({
            log: busAuditLog({ bus: await d.bus(`writer-${i}`), subjects: d.subjects }),
            signer: createSigner(seed),
          }),
        ),
      )
      const granted: AuditEntry = {
        kind: 'approval.granted',
        agentId: 'worker',
        runId: 'run-1',
        runPath: ['run-1'],
        callId: 'call_1',
        toolName: 'apply',
        shown: { task: 't-1' },
        digest: 'sha256:abc',
        decision: 'approved',
        actor: 'tina',
        requestedAt: 1_000,
        decidedAt: 4_000,
        latencyMs: 3_000,
      }
      // Each owner lets the call go by its own clock.
      await logs[0]?.record({ ...granted, releasedAt: 4_010 })
      await logs[1]?.record({ ...granted, releasedAt: 19_250 })
      // A different fact about the same call (a second decision, later, by someone else) is its own entry.
      await logs[1]?.record({ ...granted, kind: 'approval.rejected', actor: 'sam', decidedAt: 5_000, releasedAt: 19_300 })
      // The same facts under a key that is not the agent's do not stand in for its entry: stored apart (the verifier judges them).
      await logs[2]?.record({ ...granted, releasedAt: 4_000 })

      const entries = await readAudit({ bus: await d.bus('auditor'), subjects: d.subjects, idleMs: 300 })
      const agentKey = createSigner(agentSeed).publicKey
      expect(entries.map((e) => [e.kind, e.actor, e.releasedAt, e.signer === agentKey])).toEqual([
        ['approval.granted', 'tina', 4_010, true],
        ['approval.rejected', 'sam', 19_300, true],
        ['approval.granted', 'tina', 4_000, false],
      ])
    })

    it('refusals of different forged decisions in the same millisecond are each stored', async () => {
      const d = await deploy(transport)
      const log = busAuditLog({ bus: await d.bus('agent'), subjects: d.subjects })
      // Three unsigned decisions claiming three names, refused in one tick: the same actor
      // (unverified), reason and time; only the name each claimed tells them apart.
      const refused = (claimed: string): AuditEntry => ({
        kind: 'approval.rejected',
        agentId: 'claw',
        runId: 'run-1',
        runPath: ['run-1'],
        callId: 'call_1',
        toolName: 'drop_claw',
        decision: 'approved',
        reason: 'unsigned: the decision carries no signature',
        actor: 'unverified',
        claimed,
        decidedAt: 7_000,
      })
      for (const claimed of ['alice@example.com', 'claw', 'system']) await log.record(refused(claimed))
      // The same refusal written again (a retried write) is still one entry.
      await log.record(refused('system'))

      const entries = await readAudit({ bus: await d.bus('auditor'), subjects: d.subjects, idleMs: 300 })
      expect(entries.map((e) => [e.actor, e.claimed])).toEqual([
        ['unverified', 'alice@example.com'],
        ['unverified', 'claw'],
        ['unverified', 'system'],
      ])
    })

    it('a read ends only after every entry stored before it began, however long the replay pauses between batches', async () => {
      const d = await deploy(transport)
      const log = busAuditLog({ bus: await d.bus('agent'), subjects: d.subjects })
      const stored = 600
      const entry = (i: number): AuditEntry => ({
        kind: 'approval.granted',
        agentId: 'bulk',
        runId: `run-${i}`,
        runPath: [`run-${i}`],
        callId: 'call_1',
        toolName: 'apply',
        decision: 'approved',
        actor: 'tina',
        decidedAt: 1_000 + i,
      })
      for (let i = 0; i < stored; i += 50) {
        await Promise.all(Array.from({ length: Math.min(50, stored - i) }, (_, j) => log.record(entry(i + j))))
      }
      // No quiet time at all: any pause in the replay (a batch still on its way) would have ended the read.
      const entries = await readAudit({ bus: await d.bus('auditor'), subjects: d.subjects, idleMs: 0 })
      expect(entries).toHaveLength(stored)
      expect(new Set(entries.map((e) => e.runId)).size).toBe(stored)
    })
  })
}
