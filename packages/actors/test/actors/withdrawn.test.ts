/**
 * The agent says when it stops waiting for a decision: a correction that cancels a pending call
 * withdraws its approval request (`approval.withdrawn`, by the correction's sender), a cancelled
 * run withdraws its own, and its pending question (`question.withdrawn`); reviewer and answer
 * services drop them at once (not ~7 s later as orphaned, or at the deadline), and a decision sent
 * after it is refused by the agent as already settled.
 */

import {
  connectAgent,
  remoteAnswerer,
  remoteReviewer,
  sendSteering,
  serveAnswerer,
  serveReviewer,
  withdrawalOf,
} from '@signalbox/actors'
import { createSigner, createTrustPolicy, newUserSeed } from '@signalbox/actors/trust'
import { type ApprovalRequest, askHumanTool, createAgent, type Question, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { deferred, deploy, eventually, recordEvents, TRANSPORTS, trackedAudit, within } from './harness.ts'

/** The gated tool, and what it was called with (nothing, if it never runs). */
function dropClaw() {
  const calls: number[] = []
  const t = tool({
    name: 'drop_claw',
    description: 'Drop the claw. Irreversible.',
    schema: z.object({ bin: z.number() }),
    needsApproval: true,
    execute: ({ bin }) => {
      calls.push(bin)
      return `dropped into bin ${bin}`
    },
  })
  return { tool: t, calls }
}

for (const transport of TRANSPORTS) {
  describe(`withdrawn approval requests (${transport.name})`, () => {
    it('a correction withdraws the pending request: reviewers drop it at once, saying by whom; a late decision is refused', async () => {
      const d = await deploy(transport)
      const agentBus = await d.bus('agent')
      const agentKey = createSigner(newUserSeed())
      const drop = dropClaw()
      const provider = new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { bin: 9 } }] }, { content: 'steered away' }],
      })
      const audit = trackedAudit()
      const reviewer = remoteReviewer({ bus: agentBus, subjects: d.subjects, signer: agentKey })
      d.defer(() => reviewer.close())
      const agent = createAgent({
        id: 'claw',
        provider,
        tools: [drop.tool],
        reviewer,
        audit: audit.log,
        approvalTimeoutMs: 60_000,
      })
      const events = recordEvents(agent)
      const connection = connectAgent(agent, { bus: agentBus, subjects: d.subjects })
      d.defer(() => connection.close())
      await connection.ready

      // A reviewer that only accepts withdrawals signed by the agent's key, and whose person never decides.
      const reviewerBus = await d.bus('tina')
      const shown = deferred<ApprovalRequest>()
      const stopped = deferred<string>()
      const withdrawn: { id: string; reason: string; by?: string }[] = []
      const orphaned: string[] = []
      const service = serveReviewer({
        bus: reviewerBus,
        subjects: d.subjects,
        trust: createTrustPolicy({ keys: { [agentKey.publicKey]: 'claw agent' }, agents: { claw: [agentKey.publicKey] } }),
        reviewer: {
          review: (request, { signal }) =>
            new Promise((_, reject) => {
              shown.resolve(request)
              signal.addEventListener('abort', () => {
                stopped.resolve(String((signal.reason as Error)?.message))
                reject(signal.reason)
              })
            }),
        },
        onWithdrawn: (id, withdrawal) => withdrawn.push({ id, ...withdrawal }),
        onOrphaned: (request) => orphaned.push(request.requestId),
      })
      d.defer(() => service.close())
      await service.ready

      const run = agent.start('drop it in bin 9')
      const request = await within(shown.promise, 10_000, 'the request shown to the person')
      const operator = await d.bus('operator')
      await sendSteering({ bus: operator, subjects: d.subjects, agentId: 'claw', text: 'No, wait! Leave bin 9.', from: 'sam' })
      // Gone from the person's screen, as withdrawn (not settled by a decision, not orphaned).
      expect(await within(stopped.promise, 10_000, 'the person stops')).toBe('The agent withdrew the request.')
      await eventually(() => withdrawn[0], 10_000, 'the withdrawal reported')
      expect(withdrawn).toEqual([
        { id: request.requestId, reason: 'a correction cancelled the call', by: 'sam', withdrawnAt: expect.any(Number) },
      ])
      expect(service.inFlight.size).toBe(0)
      const result = await run.result
      expect(result.output).toBe('steered away')
      expect(drop.calls).toEqual([])

      // A decision sent now (a click that crossed the withdrawal) is refused by the agent, never applied.
      await reviewerBus.durablePublish(
        d.subjects.approvalDecisions('claw'),
        JSON.stringify({
          v: 1,
          type: 'approval.decision',
          requestId: request.requestId,
          callId: request.callId,
          digest: request.digest,
          approved: true,
          reviewer: 'tina',
          decidedAt: Date.now(),
        }),
        { msgId: `late-${request.requestId}` },
      )
      await eventually(() => events.of('approval.rejected')[0], 10_000, 'the late decision refused')
      expect(events.of('approval.rejected')[0]?.reason).toMatch(/already settled/)
      expect(drop.calls).toEqual([])
      expect(orphaned).toEqual([])
    })

    it('a cancelled run withdraws its pending request (an agent without a run store)', async () => {
      const d = await deploy(transport)
      const agentBus = await d.bus('agent')
      const drop = dropClaw()
      const reviewer = remoteReviewer({ bus: agentBus, subjects: d.subjects })
      d.defer(() => reviewer.close())
      const agent = createAgent({
        id: 'claw',
        provider: new ScriptedProvider({
          script: [{ toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { bin: 3 } }] }],
        }),
        tools: [drop.tool],
        reviewer,
        approvalTimeoutMs: 60_000,
      })
      const reviewerBus = await d.bus('tina')
      const shown = deferred<ApprovalRequest>()
      const withdrawn: string[] = []
      const service = serveReviewer({
        bus: reviewerBus,
        subjects: d.subjects,
        reviewer: {
          review: (request, { signal }) =>
            new Promise((_, reject) => {
              shown.resolve(request)
              signal.addEventListener('abort', () => reject(signal.reason))
            }),
        },
        onWithdrawn: (_id, withdrawal) => withdrawn.push(`${withdrawal.reason}${withdrawal.by ? ` by ${withdrawal.by}` : ''}`),
      })
      d.defer(() => service.close())
      await service.ready
      const run = agent.start('drop it')
      run.result.catch(() => {})
      await within(shown.promise, 10_000, 'the request shown')
      run.cancel('the person changed their mind', { by: 'carol' })
      await eventually(() => withdrawn[0], 10_000, 'the withdrawal')
      expect(withdrawn).toEqual(['the run was cancelled (the person changed their mind) by carol'])
    })

    it('a cancelled run withdraws its pending question: answerers drop it at once, saying by whom (signed by the agent; a forged withdrawal does not count)', async () => {
      const d = await deploy(transport)
      const agentBus = await d.bus('agent')
      const agentKey = createSigner(newUserSeed())
      const answerer = remoteAnswerer({ bus: agentBus, subjects: d.subjects, signer: agentKey })
      d.defer(() => answerer.close())
      const agent = createAgent({
        id: 'claw',
        provider: new ScriptedProvider({
          script: [{ toolCalls: [{ id: 'call_ask', name: 'ask_human', arguments: { question: 'Which bin?' } }] }],
        }),
        tools: [askHumanTool({ answerer, timeoutMs: 60_000 })],
      })
      const answererBus = await d.bus('bob')
      const shown = deferred<Question>()
      const stopped = deferred<unknown>()
      const withdrawn: { id: string; reason: string; by?: string }[] = []
      const service = serveAnswerer({
        bus: answererBus,
        subjects: d.subjects,
        // Only withdrawals signed by the agent's key count.
        trust: createTrustPolicy({ keys: { [agentKey.publicKey]: 'claw agent' }, agents: { claw: [agentKey.publicKey] } }),
        answerer: {
          answer: (question, { signal }) =>
            new Promise((_, reject) => {
              shown.resolve(question)
              signal.addEventListener('abort', () => {
                stopped.resolve(signal.reason)
                reject(signal.reason)
              })
            }),
        },
        onWithdrawn: (id, withdrawal) => withdrawn.push({ id, reason: withdrawal.reason, by: withdrawal.by }),
      })
      d.defer(() => service.close())
      await service.ready
      const run = agent.start('ask')
      run.result.catch(() => {})
      const question = await within(shown.promise, 10_000, 'the question shown')
      // Anyone may publish on the subject (the permissions allow agents): unsigned, it changes nothing.
      await answererBus.durablePublish(
        d.subjects.questionWithdrawals('claw'),
        JSON.stringify({
          v: 1,
          type: 'question.withdrawn',
          questionId: question.questionId,
          agentId: 'claw',
          callId: question.callId,
          reason: 'forged',
          withdrawnAt: Date.now(),
        }),
        { msgId: 'forged-withdrawal' },
      )
      run.cancel('wrong prize', { by: 'carol' })
      // The person asking is told at once (the question is withdrawn), not at its deadline a minute away.
      expect(withdrawalOf(await within(stopped.promise, 10_000, 'the answerer stopped'))).toBe('withdrawn')
      expect(withdrawn).toEqual([{ id: question.questionId, reason: 'the run was cancelled (wrong prize)', by: 'carol' }])
    })
  })
}
