/**
 * Scenario 2: decisions are bound to the request. Forged, mismatched, malformed and duplicate
 * decisions published straight on `approvals.<agent>.decisions` are never applied; the first
 * valid one wins; the rejections are recorded. Two reviewer services in `shared` mode decide
 * each request once.
 */

import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { createAgent, policyReviewer } from '@signalbox/core'
import { type Bus, BusPayloadTooLargeError } from '@signalbox/core/bus'
import { type ApprovalDecisionMessage, ApprovalRequestMessage, decodeMessage } from '@signalbox/core/protocol'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import {
  type Deployment,
  deploy,
  eventually,
  LARGE,
  OVERSIZED,
  payTool,
  readByModel,
  recordEvents,
  sleep,
  TRANSPORTS,
  trackedAudit,
  watchRejections,
} from './harness.ts'

const ARGS = { to: 'bob', amount: 42 }

async function captureRequests(bus: Bus, d: Deployment, agentId: string) {
  const requests: ApprovalRequestMessage[] = []
  const subscription = bus.durableConsume(d.subjects.approvals(agentId), (message) => {
    message.ack()
    const decoded = decodeMessage(message.data, ApprovalRequestMessage)
    if (decoded.ok) requests.push(decoded.value)
  })
  d.defer(() => subscription.unsubscribe())
  await subscription.ready
  return requests
}

for (const transport of TRANSPORTS) {
  describe(`decisions bound to the request (${transport.name})`, () => {
    it('forged, mismatched, malformed and duplicate decisions are rejected and recorded; the first valid one wins', async () => {
      const d = await deploy(transport)
      const agentBus = await d.bus('agent')
      const audit = trackedAudit()
      const reviewer = remoteReviewer({ bus: agentBus, subjects: d.subjects, audit: audit.log })
      d.defer(() => reviewer.close())
      const pay = payTool()
      const provider = new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'call_pay_1', name: 'pay', arguments: ARGS }] }, { content: 'done' }],
      })
      const agent = createAgent({
        id: 'payer',
        provider,
        tools: [pay.tool],
        reviewer,
        audit: audit.log,
        approvalTimeoutMs: 20_000,
      })
      const events = recordEvents(agent)

      const forger = await d.bus('forger')
      const rejections = await watchRejections(forger, d.subjects)
      const requests = await captureRequests(forger, d, 'payer')

      const handle = agent.start('pay bob 42')
      const request = await eventually(() => requests[0], 5_000, 'the approval request on the bus')
      const subject = d.subjects.approvalDecisions('payer')
      let n = 0
      const publish = (payload: unknown) =>
        forger.durablePublish(subject, typeof payload === 'string' ? payload : JSON.stringify(payload), {
          msgId: `forged-${++n}`,
        })
      const valid: ApprovalDecisionMessage = {
        v: 1,
        type: 'approval.decision',
        requestId: request.requestId,
        callId: request.callId,
        digest: request.digest,
        approved: true,
        reviewer: 'mallory',
        decidedAt: Date.now(),
      }

      await publish({ ...valid, digest: `sha256:${'0'.repeat(64)}` }) // arguments differ from what was shown
      await publish({ ...valid, callId: 'call_other' }) // another call
      await publish({ ...valid, requestId: 'request_unknown' }) // nobody asked
      await publish('{"v":1,"type":"approval.decision",') // malformed JSON
      await publish({ ...valid, v: 2 }) // wrong version
      await publish({ ...valid, approved: 'yes' }) // schema-invalid
      await publish({ ...valid, reason: LARGE }) // large but allowed by the bus: invalid (reason > 4096)
      await expect(publish({ ...valid, reason: OVERSIZED })).rejects.toBeInstanceOf(BusPayloadTooLargeError)
      // The protocol rejections arrive before anything valid is sent, and the run is still waiting.
      await rejections.waitFor('agent-approvals', 6)
      expect(pay.paid).toEqual([])
      expect(events.of('approval.decided')).toEqual([])
      expect(agent.runs.get(handle.runId)?.actor.getSnapshot().value).toMatchObject({
        running: { turn: { toolCalls: 'awaitingApproval' } },
      })

      await publish({ ...valid, approved: false, reason: 'first valid decision: no', reviewer: 'alice' })
      await publish({ ...valid, approved: true, reason: 'too late', reviewer: 'carol' }) // duplicate after the valid one

      const result = await handle.result
      expect(result.output).toBe('done')
      expect(pay.paid).toEqual([])
      expect(readByModel(provider, 'call_pay_1')).toBe(
        'Denied by alice: first valid decision: no. The call "pay" was not executed.',
      )
      expect(audit.of('approval.denied')).toMatchObject([{ actor: 'alice' }])
      expect(audit.of('approval.granted')).toEqual([])
      expect(events.of('approval.decided')).toHaveLength(1)

      // Recorded: the mismatches and the late duplicate, in the audit trail...
      const rejected = await eventually(
        () => (audit.of('approval.rejected').length >= 3 ? audit.of('approval.rejected') : undefined),
        3_000,
        'audit rejections',
      )
      expect(rejected.map((entry) => [entry.actor, entry.reason])).toEqual([
        ['mallory', 'the digest does not match the pending call (arguments differ from what was shown)'],
        ['mallory', 'callId call_other does not match the pending call call_pay_1'],
        ['carol', 'the request was already settled (late or duplicate reply)'],
      ])
      // ...and every refusal as a `rejection` notice, with a protocol code for the unreadable ones.
      const notices = await rejections.waitFor('agent-approvals', 7)
      expect(notices.map((r) => r.error.code)).toEqual([
        'PROTOCOL_INVALID_MESSAGE', // digest mismatch
        'PROTOCOL_INVALID_MESSAGE', // callId mismatch
        'PROTOCOL_INVALID_JSON',
        'PROTOCOL_UNSUPPORTED_VERSION',
        'PROTOCOL_INVALID_MESSAGE', // approved: "yes"
        'PROTOCOL_INVALID_MESSAGE', // huge reason
        'PROTOCOL_INVALID_MESSAGE', // the late duplicate
      ])
      expect(notices[0]?.error.message).toMatch(/digest does not match/)
      expect(notices[6]?.error.message).toMatch(/already settled/)
      expect(notices.every((r) => r.subject === subject)).toBe(true)
      expect(rejections.invalid).toEqual([])
      expect(d.handlerErrors).toEqual([])
    })

    it('a copy of the applied decision right behind it is audited as already settled after the grant, every time', async () => {
      const d = await deploy(transport)
      const agentBus = await d.bus('agent')
      const sender = await d.bus('sender')
      // Each round both copies are published at once, so the second is delivered as close behind the
      // first as the bus allows: the grant must be audited before the copy's rejection regardless.
      for (let round = 0; round < 15; round++) {
        const agentId = `payer${round}`
        const audit = trackedAudit()
        const reviewer = remoteReviewer({ bus: agentBus, subjects: d.subjects, audit: audit.log })
        d.defer(() => reviewer.close())
        const pay = payTool()
        const agent = createAgent({
          id: agentId,
          provider: new ScriptedProvider({
            script: [{ toolCalls: [{ id: 'call_pay', name: 'pay', arguments: ARGS }] }, { content: 'done' }],
          }),
          tools: [pay.tool],
          reviewer,
          audit: audit.log,
          approvalTimeoutMs: 20_000,
        })
        const requests = await captureRequests(sender, d, agentId)
        const handle = agent.start('pay bob 42')
        const request = await eventually(() => requests[0], 5_000, 'the approval request on the bus')
        const decision = JSON.stringify({
          v: 1,
          type: 'approval.decision',
          requestId: request.requestId,
          callId: request.callId,
          digest: request.digest,
          approved: true,
          reviewer: 'alice',
          decidedAt: Date.now(),
        } satisfies ApprovalDecisionMessage)
        const subject = d.subjects.approvalDecisions(agentId)
        await Promise.all([
          sender.durablePublish(subject, decision, { msgId: `${agentId}-first` }),
          sender.durablePublish(subject, decision, { msgId: `${agentId}-copy` }),
        ])
        expect((await handle.result).output).toBe('done')
        await eventually(() => audit.of('approval.rejected').length === 1, 3_000, 'the copy rejected')
        expect(pay.paid).toHaveLength(1)
        expect(audit.entries.map((e) => [e.kind, e.reason])).toEqual([
          ['approval.granted', undefined],
          ['approval.rejected', 'the request was already settled (late or duplicate reply)'],
        ])
      }
      expect(d.handlerErrors).toEqual([])
    })

    it('two reviewer services in shared mode: each request is decided exactly once', async () => {
      const d = await deploy(transport)
      const agentBus = await d.bus('agent')
      const audit = trackedAudit()
      const reviewer = remoteReviewer({ bus: agentBus, subjects: d.subjects, audit: audit.log })
      d.defer(() => reviewer.close())
      const pay = payTool()
      const calls = Array.from({ length: 8 }, (_, i) => ({
        id: `call_${i}`,
        name: 'pay',
        arguments: { to: `payee${i}`, amount: i },
      }))
      const provider = new ScriptedProvider({ script: [{ toolCalls: calls }, { content: 'done' }] })
      const agent = createAgent({
        id: 'payer',
        provider,
        tools: [pay.tool],
        reviewer,
        audit: audit.log,
        approvalTimeoutMs: 10_000,
      })

      const decidedBy = new Map<string, string[]>()
      for (const name of ['reviewer-a', 'reviewer-b']) {
        const bus = await d.bus(name)
        const service = serveReviewer({
          bus,
          subjects: d.subjects,
          mode: 'shared',
          reviewer: policyReviewer(() => true, { name }),
          onDecision: (request) => decidedBy.set(request.requestId, [...(decidedBy.get(request.requestId) ?? []), name]),
        })
        d.defer(() => service.close())
        await service.ready
      }

      const result = await agent.run('pay everyone')
      expect(result.output).toBe('done')
      expect(pay.paid).toHaveLength(8)
      // A decision is reported once its store is acknowledged, which may come after the agent read it.
      await eventually(() => decidedBy.size === 8, 10_000, 'every decision reported')
      await sleep(150) // a second decision on any request would arrive (and be rejected) by now
      expect(decidedBy.size).toBe(8)
      expect([...decidedBy.values()].every((names) => names.length === 1)).toBe(true)
      expect(audit.of('approval.granted')).toHaveLength(8)
      expect(audit.of('approval.rejected')).toEqual([])
      if (transport.name === 'in-process') {
        // Deterministic round-robin: both members got work.
        expect(new Set([...decidedBy.values()].flat()).size).toBe(2)
      }
    })
  })
}
