/**
 * A stored run's approval request outlives its process (it resumes, maybe elsewhere), so its
 * remote reviewer never marks it for orphaning: no `heartbeatMs` on the request and no
 * `approval.alive` for it, even with heartbeats configured. The same reviewer, for an agent
 * without a store, beats (its request is withdrawn if the process dies).
 */
import { type ApprovalRequest, createAgent } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import {
  type ApprovalAliveMessage,
  type ApprovalRequestMessage,
  decodeMessage,
  ApprovalRequestMessage as RequestSchema,
} from '@signalbox/core/protocol'
import { MemoryRunStore } from '@signalbox/core/store'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { NATS_URL, uniquePrefix } from '../../../../test/support/env.ts'
import { remoteReviewer } from '../../src/index.ts'
import { connectNatsBus } from '../../src/nats/index.ts'
import { eventually, payTool } from './harness.ts'

describe('approval heartbeats and stored runs', () => {
  it('a stored run’s request is never marked for orphaning; a run without a store beats', async () => {
    const prefix = uniquePrefix()
    const subjects = createSubjects(prefix)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: `heartbeats-${prefix}` })
    const reviewer = remoteReviewer({ bus, subjects, heartbeatMs: 100, audit: false })
    onTestFinished(async () => {
      reviewer.close()
      await (await bus.manager()).streams.delete(bus.streamName).catch(() => {})
      await bus.close()
    })
    const requests = new Map<string, ApprovalRequestMessage>()
    const beats = new Map<string, number>()
    for (const agentId of ['stored', 'unstored']) {
      bus.durableConsume(
        subjects.approvals(agentId),
        (message) => {
          message.ack()
          const decoded = decodeMessage(message.data, RequestSchema)
          if (decoded.ok) requests.set(agentId, decoded.value)
        },
        { deliverAll: true },
      )
      bus.subscribe(subjects.alive(agentId), (message) => {
        const alive = JSON.parse(message.text()) as ApprovalAliveMessage
        beats.set(alive.agentId, (beats.get(alive.agentId) ?? 0) + 1)
      })
    }
    const start = (id: string, store?: MemoryRunStore) => {
      const provider = new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'call_pay', name: 'pay', arguments: { to: 'kim', amount: 5 } }] }, { content: 'ok' }],
      })
      const agent = createAgent({
        id,
        provider,
        tools: [payTool().tool],
        reviewer,
        approvalTimeoutMs: 60_000,
        ...(store ? { store } : {}),
      })
      const requested = new Promise<ApprovalRequest>((resolve) =>
        agent.on('approval.requested', (event) => resolve(event.request)),
      )
      const handle = agent.start('pay kim')
      onTestFinished(async () => {
        handle.cancel('test over')
        await handle.result.catch(() => {})
      })
      return requested
    }
    await Promise.all([start('stored', new MemoryRunStore()), start('unstored')])

    // The control beats several times; by then the stored run's request would have too.
    await eventually(() => (beats.get('unstored') ?? 0) >= 4, 10_000, 'the run without a store to beat')
    await eventually(() => requests.size === 2, 10_000, 'both requests to be stored')
    expect(requests.get('unstored')?.heartbeatMs).toBe(100)
    expect(requests.get('stored')).toBeDefined()
    expect(requests.get('stored')?.heartbeatMs).toBeUndefined()
    expect(beats.get('stored')).toBeUndefined()
  })
})
