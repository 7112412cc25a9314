/**
 * Silencing a reviewer by storing a message under its decision's id first, over real NATS. The ids
 * are unguessable, so the attacker here is given the id (a bus that leaks it): the real decision's
 * publish then comes back `duplicate: true`, which the reviewer reports as a failure (not as sent),
 * and it tries again under a new id, so the agent still gets the decision.
 */
import { policyReviewer } from '@signalbox/core'
import type { Bus } from '@signalbox/core/bus'
import { ApprovalDecisionMessage, type ApprovalRequestMessage, callDigest, decodeMessage } from '@signalbox/core/protocol'
import { describe, expect, it } from 'vitest'
import { serveReviewer } from '../../src/index.ts'
import { createSigner, newUserSeed } from '../../src/trust/index.ts'
import { deploy, eventually, nats } from '../actors/harness.ts'

describe('decision message ids (nats)', () => {
  it('a duplicate ack for a decision the reviewer did not store is a failure, and the decision is stored again', async () => {
    const d = await deploy(nats)
    const reviewerBus = await d.bus('reviewer')
    const attacker = await d.bus('attacker')
    const taken: string[] = []
    // The leak: before the reviewer's first publish of each decision, the attacker stores junk under its id.
    const leaky: Bus = {
      name: reviewerBus.name,
      maxPayload: reviewerBus.maxPayload,
      publish: (...args) => reviewerBus.publish(...args),
      subscribe: (...args) => reviewerBus.subscribe(...args),
      request: (...args) => reviewerBus.request(...args),
      requestMany: (...args) => reviewerBus.requestMany(...args),
      durableConsume: (...args) => reviewerBus.durableConsume(...args),
      durableLast: (...args) => reviewerBus.durableLast(...args),
      flush: (signal) => reviewerBus.flush(signal),
      onStatus: (listener) => reviewerBus.onStatus(listener),
      close: () => reviewerBus.close(),
      async durablePublish(subject, data, options) {
        if (subject.endsWith('.decisions') && taken.length === 0) {
          taken.push(options.msgId)
          await attacker.durablePublish(subject, '{"v":1,"type":"junk"}', { msgId: options.msgId })
        }
        return reviewerBus.durablePublish(subject, data, options)
      },
    }
    const tina = createSigner(newUserSeed())
    const errors: unknown[] = []
    const decided: string[] = []
    const service = serveReviewer({
      bus: leaky,
      subjects: d.subjects,
      signer: tina,
      reviewer: policyReviewer(() => true, { name: 'tina' }),
      onError: (error) => errors.push(error),
      onDecision: (request) => decided.push(request.requestId),
    })
    d.defer(() => service.close())
    await service.ready

    const decisions: ApprovalDecisionMessage[] = []
    const watch = attacker.durableConsume(d.subjects.approvalDecisions('claw'), (message) => {
      message.ack()
      const decoded = decodeMessage(message.data, ApprovalDecisionMessage)
      if (decoded.ok) decisions.push(decoded.value)
    })
    d.defer(() => watch.unsubscribe())
    await watch.ready

    const args = { bin: 3 }
    const request: ApprovalRequestMessage = {
      v: 1,
      type: 'approval.request',
      requestId: 'request_1',
      agentId: 'claw',
      runId: 'run_1',
      runPath: [],
      callId: 'call_1',
      toolName: 'drop_claw',
      arguments: args,
      digest: callDigest('drop_claw', args),
      deadline: Date.now() + 60_000,
      requestedAt: Date.now(),
    }
    await attacker.durablePublish(d.subjects.approvals('claw'), JSON.stringify(request), { msgId: request.requestId })

    await eventually(() => decisions[0], 10_000, 'the decision, stored after all')
    // Reported once its store is acknowledged, which may come after a watcher already read it.
    await eventually(() => decided[0], 10_000, 'the decision reported as made')
    expect(taken).toHaveLength(1)
    expect(taken[0]).toMatch(/^decision-request_1-[0-9a-f]{24}$/)
    expect(errors).toMatchObject([{ code: 'DECISION_NOT_STORED' }])
    expect(decisions).toMatchObject([{ requestId: 'request_1', approved: true, signer: tina.publicKey }])
    expect(decided).toEqual(['request_1'])
  }, 30_000)
})
