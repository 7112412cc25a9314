/**
 * `approval.requested` is announced only once the request is stored and the agent can receive
 * the decision: whoever acts on the announcement at once (a watcher of the agent's events) is
 * never lost, and on NATS the request is already in the stream when the event is seen.
 */
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { type AgentEvent, createAgent } from '@signalbox/core'
import type { Bus } from '@signalbox/core/bus'
import {
  type ApprovalDecisionMessage,
  decodeMessage,
  EventMessage,
  encodeMessage,
  PROTOCOL_VERSION,
} from '@signalbox/core/protocol'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { NATS_URL } from '../../../../test/support/env.ts'
import { connectAgent, remoteReviewer } from '../../src/index.ts'
import type { NatsBus } from '../../src/nats/index.ts'
import { deploy, payTool, TRANSPORTS, trackedAudit } from './harness.ts'

const ARGS = { to: 'bob', amount: 42 }

/** The same bus behind a slow link: durable publishes and new consumers take `ms` longer. */
function withLatency(bus: Bus, ms: number): Bus {
  const pause = () => new Promise<void>((resolve) => setTimeout(resolve, ms))
  return new Proxy(bus, {
    get(target, key) {
      if (key === 'durablePublish') {
        return async (...args: Parameters<Bus['durablePublish']>) => {
          await pause()
          return target.durablePublish(...args)
        }
      }
      if (key === 'durableConsume') {
        return (...args: Parameters<Bus['durableConsume']>) => {
          const subscription = target.durableConsume(...args)
          const ready = subscription.ready.then(pause)
          return new Proxy(subscription, {
            get(s, k) {
              if (k === 'ready') return ready
              const value = Reflect.get(s, k, s)
              return typeof value === 'function' ? value.bind(s) : value
            },
          })
        }
      }
      const value = Reflect.get(target, key, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}

for (const transport of TRANSPORTS) {
  describe(`approval.requested is announced once the request can be answered (${transport.name})`, () => {
    it('a decision published the moment the event is seen is applied, once', async () => {
      const d = await deploy(transport)
      // A slow link makes the window wide: storing the request and starting the decisions
      // consumer each take 300 ms longer than the watcher needs to see the event and answer.
      const agentBus = withLatency(await d.bus('agent'), 300)
      const watcherBus = await d.bus('watcher')
      const audit = trackedAudit()
      const reviewer = remoteReviewer({ bus: agentBus, subjects: d.subjects, audit: audit.log })
      d.defer(() => reviewer.close())
      const pay = payTool()
      const agent = createAgent({
        id: 'payer',
        provider: new ScriptedProvider({
          script: [{ toolCalls: [{ id: 'call_pay_1', name: 'pay', arguments: ARGS }] }, { content: 'done' }],
        }),
        tools: [pay.tool],
        reviewer,
        audit: audit.log,
        // Long: a lost decision would show as a timeout, not as a slow test.
        approvalTimeoutMs: 20_000,
      })
      const connection = connectAgent(agent, { bus: agentBus, subjects: d.subjects })
      d.defer(() => connection.close())
      await connection.ready

      const storedWhenSeen: boolean[] = []
      const admin = transport.name === 'nats' ? await connect({ servers: NATS_URL }) : undefined
      d.defer(() => admin?.close())
      // The watcher decides the instant it sees the event on the bus, from another connection.
      const watch = watcherBus.subscribe(d.subjects.events('payer', 'approval.requested'), async (message) => {
        const decoded = decodeMessage(message.data, EventMessage)
        if (!decoded.ok) return
        const event = decoded.value.event as unknown as Extract<AgentEvent, { type: 'approval.requested' }>
        const { request } = event
        if (admin !== undefined) {
          const jsm = await jetstreamManager(admin)
          const stored = await jsm.streams
            .getMessage(((await d.bus('probe')) as NatsBus).streamName, { last_by_subj: d.subjects.approvals('payer') })
            .then((m) => m?.json<{ requestId: string }>().requestId === request.requestId)
            .catch(() => false)
          storedWhenSeen.push(stored)
        }
        const decision: ApprovalDecisionMessage = {
          v: PROTOCOL_VERSION,
          type: 'approval.decision',
          requestId: request.requestId,
          callId: request.callId,
          digest: request.digest,
          approved: true,
          reviewer: 'watcher',
          decidedAt: Date.now(),
        }
        await watcherBus.durablePublish(d.subjects.approvalDecisions('payer'), encodeMessage(decision), {
          msgId: `decision-${request.requestId}`,
          signal: AbortSignal.timeout(5_000),
        })
      })
      d.defer(() => watch.unsubscribe())
      await watch.ready

      const result = await agent.run('pay bob 42')

      expect(result.output).toBe('done')
      expect(pay.paid).toEqual([ARGS])
      expect(audit.of('approval.granted')).toMatchObject([{ actor: 'watcher', decision: 'approved' }])
      expect(audit.of('approval.timeout')).toEqual([])
      if (transport.name === 'nats') expect(storedWhenSeen).toEqual([true])
    })
  })
}
