/**
 * Scenario 1: remote approval. The agent asks over the bus (`remoteReviewer`); a reviewer
 * service in another actor (`serveReviewer`) decides. Same scenarios on both transports.
 */

import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { type ApprovalRequest, createAgent, policyReviewer, ScriptedReviewer } from '@signalbox/core'
import { callDigest } from '@signalbox/core/protocol'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { type Deployment, deploy, eventually, payTool, readByModel, recordEvents, TRANSPORTS, trackedAudit } from './harness.ts'

const ARGS = { to: 'bob', amount: 42 }

async function payingAgent(d: Deployment, options: { approvalTimeoutMs: number }) {
  const bus = await d.bus('agent')
  const audit = trackedAudit()
  const reviewer = remoteReviewer({ bus, subjects: d.subjects, audit: audit.log })
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
    approvalTimeoutMs: options.approvalTimeoutMs,
  })
  const events = recordEvents(agent)
  return { agent, provider, pay, audit, events, read: () => readByModel(provider, 'call_pay_1') }
}

async function reviewerService(d: Deployment, reviewer: Parameters<typeof serveReviewer>[0]['reviewer']) {
  const bus = await d.bus('reviewer')
  const seen: ApprovalRequest[] = []
  const service = serveReviewer({ bus, subjects: d.subjects, reviewer, onRequest: (request) => seen.push(request) })
  d.defer(() => service.close())
  await service.ready
  return { service, seen }
}

for (const transport of TRANSPORTS) {
  describe(`remote approval (${transport.name})`, () => {
    it('approved remotely: the tool runs and the model reads its result', async () => {
      const d = await deploy(transport)
      const s = await payingAgent(d, { approvalTimeoutMs: 10_000 })
      const { seen } = await reviewerService(
        d,
        policyReviewer((request) => (request.arguments as typeof ARGS).amount < 100, { name: 'finance-policy' }),
      )

      const result = await s.agent.run('pay bob 42')

      expect(result.output).toBe('done')
      expect(s.pay.paid).toEqual([ARGS])
      expect(s.read()).toBe('paid 42 to bob')
      // The service saw exactly the call the agent will run, with every binding field.
      expect(seen).toHaveLength(1)
      const request = seen[0] as ApprovalRequest
      const [requested] = s.events.of('approval.requested')
      expect(request).toEqual(requested?.request)
      expect(request).toMatchObject({
        agentId: 'payer',
        runId: result.runId,
        runPath: [],
        callId: 'call_pay_1',
        toolName: 'pay',
        arguments: ARGS,
        digest: callDigest('pay', ARGS),
      })
      expect(request.deadline - request.requestedAt).toBe(10_000)
      expect(request.requestId).toMatch(/^request_/)
      const [granted] = s.audit.of('approval.granted')
      expect(granted).toMatchObject({ actor: 'finance-policy', decision: 'approved', callId: 'call_pay_1', shown: ARGS })
      expect(s.audit.of('approval.rejected')).toEqual([])
    })

    it('denied remotely: the tool does not run and the model reads the reason', async () => {
      const d = await deploy(transport)
      const s = await payingAgent(d, { approvalTimeoutMs: 10_000 })
      await reviewerService(
        d,
        policyReviewer(() => ({ approved: false, reason: 'bob is not a known payee' }), { name: 'finance-policy' }),
      )

      const result = await s.agent.run('pay bob 42')

      expect(result.output).toBe('done')
      expect(s.pay.paid).toEqual([])
      expect(s.read()).toBe('Denied by finance-policy: bob is not a known payee. The call "pay" was not executed.')
      expect(s.audit.of('approval.denied')).toMatchObject([
        { actor: 'finance-policy', reason: 'bob is not a known payee', decision: 'denied' },
      ])
    })

    it('no reviewer service at all: denied at the deadline, recorded as a timeout', async () => {
      const d = await deploy(transport)
      const s = await payingAgent(d, { approvalTimeoutMs: 300 })

      const started = Date.now()
      const result = await s.agent.run('pay bob 42')
      const elapsed = Date.now() - started

      expect(result.output).toBe('done')
      expect(s.pay.paid).toEqual([])
      expect(elapsed).toBeGreaterThanOrEqual(280)
      expect(elapsed).toBeLessThan(3_000)
      expect(s.read()).toMatch(/^Not executed: nobody approved "pay" within [^,]+, so it was denied by default/)
      expect(s.audit.of('approval.timeout')).toMatchObject([
        { decision: 'timeout', actor: 'system', callId: 'call_pay_1', shown: ARGS },
      ])
      expect(s.audit.of('approval.granted')).toEqual([])
      expect(s.events.of('approval.timeout')).toHaveLength(1)
    })

    it('a reviewer that never answers: denied at the deadline, and the service lets go of the request', async () => {
      const d = await deploy(transport)
      const s = await payingAgent(d, { approvalTimeoutMs: 300 })
      const person = new ScriptedReviewer(['never'], { name: 'walked-away' })
      const { service, seen } = await reviewerService(d, person)

      const result = await s.agent.run('pay bob 42')

      expect(s.pay.paid).toEqual([])
      expect(s.read()).toMatch(/nobody approved "pay"/)
      expect(s.audit.of('approval.timeout')).toMatchObject([{ decision: 'timeout', actor: 'system' }])
      expect(result.output).toBe('done')
      expect(seen).toHaveLength(1)
      expect(person.requests).toHaveLength(1)
      await eventually(() => service.inFlight.size === 0, 2_000, 'the service to drop the expired request')
    })

    it('a reviewer that ignores its abort signal: denied at the deadline, the service still drops the request', async () => {
      const d = await deploy(transport)
      const s = await payingAgent(d, { approvalTimeoutMs: 300 })
      // A policy that hangs and never looks at its signal (a buggy integration, a stuck UI).
      const { service, seen } = await reviewerService(
        d,
        policyReviewer(() => new Promise<boolean>(() => {}), { name: 'stuck' }),
      )

      await s.agent.run('pay bob 42')

      expect(s.pay.paid).toEqual([])
      expect(s.audit.of('approval.timeout')).toHaveLength(1)
      expect(seen).toHaveLength(1)
      // Past the deadline nobody waits for this answer: it must not stay in flight (and keep the
      // durable message alive) forever.
      await eventually(() => service.inFlight.size === 0, 2_000, 'the service to drop the expired request')
    })
  })
}
