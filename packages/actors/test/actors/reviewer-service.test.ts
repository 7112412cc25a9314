/**
 * The reviewer service's rules that a foreign reviewer must copy (docs/protocol.md §4.1, §2.6):
 * it skips a request someone already decided only when that decision quotes the same call id
 * and digest (a bogus decision cannot make reviewers drop a real request), and it waits for the
 * stream when it starts before any agent created it (consumer creation fails with 10059).
 */
import { AckPolicy, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { createAgent, policyReviewer, type Reviewer } from '@signalbox/core'
import type { Bus } from '@signalbox/core/bus'
import { type ApprovalDecisionMessage, type ApprovalRequestMessage, callDigest } from '@signalbox/core/protocol'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { NATS_URL } from '../../../../test/support/env.ts'
import { remoteReviewer, serveReviewer, withdrawalOf } from '../../src/index.ts'
import type { NatsBus } from '../../src/nats/index.ts'
import { deploy, eventually, payTool, sleep, TRANSPORTS } from './harness.ts'

function approvalRequest(requestId: string): ApprovalRequestMessage {
  const args = { to: 'bob', amount: 5 }
  return {
    v: 1,
    type: 'approval.request',
    requestId,
    agentId: 'payer',
    runId: 'run_1',
    runPath: [],
    callId: `call_${requestId}`,
    toolName: 'pay',
    arguments: args,
    digest: callDigest('pay', args),
    deadline: Date.now() + 30_000,
    requestedAt: Date.now(),
  }
}

const decisionFor = (request: ApprovalRequestMessage, over: Partial<ApprovalDecisionMessage> = {}): ApprovalDecisionMessage => ({
  v: 1,
  type: 'approval.decision',
  requestId: request.requestId,
  callId: request.callId,
  digest: request.digest,
  approved: false,
  reason: 'no',
  reviewer: 'someone',
  decidedAt: Date.now(),
  ...over,
})

for (const transport of TRANSPORTS) {
  describe(`reviewer service: what counts as already decided (${transport.name})`, () => {
    it('a decision quoting another call or digest does not make the service drop the real request; a matching one does', async () => {
      const d = await deploy(transport)
      const attacker = await d.bus('attacker')
      const subject = d.subjects.approvalDecisions('payer')
      const bogusDigest = approvalRequest('request_bogus_digest')
      const bogusCall = approvalRequest('request_bogus_call')
      const decided = approvalRequest('request_decided')
      // Stored before the service starts: it reads them while catching up with the settlement log.
      await attacker.durablePublish(subject, JSON.stringify(decisionFor(bogusDigest, { digest: `sha256:${'0'.repeat(64)}` })), {
        msgId: 'bogus-1',
      })
      await attacker.durablePublish(subject, JSON.stringify(decisionFor(bogusCall, { callId: 'call_other' })), {
        msgId: 'bogus-2',
      })
      await attacker.durablePublish(subject, JSON.stringify(decisionFor(decided)), { msgId: 'real-1' })

      const bus = await d.bus('reviewer')
      const seen: string[] = []
      const service = serveReviewer({
        bus,
        subjects: d.subjects,
        reviewer: policyReviewer(() => true, { name: 'policy' }),
        onRequest: (request) => seen.push(request.requestId),
      })
      d.defer(() => service.close())
      await service.ready

      // A bogus decision published while the service runs does not withdraw anything either.
      const late = approvalRequest('request_bogus_late')
      await attacker.durablePublish(subject, JSON.stringify(decisionFor(late, { digest: `sha256:${'1'.repeat(64)}` })), {
        msgId: 'bogus-3',
      })
      for (const request of [bogusDigest, bogusCall, decided, late]) {
        await attacker.durablePublish(d.subjects.approvals('payer'), JSON.stringify(request), { msgId: request.requestId })
      }
      await eventually(() => seen.length >= 3, 5_000, 'the three real requests to be decided')
      await sleep(300)
      expect([...seen].sort()).toEqual(['request_bogus_call', 'request_bogus_digest', 'request_bogus_late'])
    })
  })
}

describe('reviewer service started before the stream exists (nats)', () => {
  it('consumer creation fails with 10059; the service waits, retries and decides once an agent created the stream', async () => {
    const nats = TRANSPORTS.find((t) => t.name === 'nats') as (typeof TRANSPORTS)[number]
    const d = await deploy(nats)
    const reviewerBus = (await d.bus('reviewer')) as NatsBus
    // As if no agent had run yet: the stream is not there.
    const admin = await connect({ servers: NATS_URL, name: `admin-${d.prefix}` })
    d.defer(() => admin.close())
    const jsm = await jetstreamManager(admin)
    await jsm.streams.delete(reviewerBus.streamName)
    await expect(jsm.consumers.add(reviewerBus.streamName, { name: 'probe', ack_policy: AckPolicy.Explicit })).rejects.toThrow(
      /stream not found/,
    )

    const decided: string[] = []
    const service = serveReviewer({
      bus: reviewerBus,
      subjects: d.subjects,
      reviewer: policyReviewer(() => true, { name: 'policy' }),
      onDecision: (request) => decided.push(request.requestId),
    })
    d.defer(() => service.close())
    let ready = false
    void service.ready.then(() => {
      ready = true
    })
    await sleep(500)
    expect(ready).toBe(false)

    // An agent connects (its bus creates the stream) and asks.
    const agentBus = await d.bus('agent')
    const reviewer = remoteReviewer({ bus: agentBus, subjects: d.subjects })
    d.defer(() => reviewer.close())
    const pay = payTool()
    const provider = new ScriptedProvider({
      script: [{ toolCalls: [{ id: 'call_pay', name: 'pay', arguments: { to: 'bob', amount: 1 } }] }, { content: 'paid' }],
    })
    const agent = createAgent({ id: 'payer', provider, tools: [pay.tool], reviewer, approvalTimeoutMs: 20_000 })
    const result = await agent.start('pay bob 1').result
    expect(result.output).toBe('paid')
    expect(pay.paid).toEqual([{ to: 'bob', amount: 1 }])
    // `onDecision` runs once the decision's PubAck is in, which may be after the agent applied it.
    await eventually(() => decided.length === 1, 5_000, 'the decision to be reported')
    expect(ready).toBe(true)
  })
})

for (const transport of TRANSPORTS) {
  describe(`reviewer service: many pending requests at once (${transport.name})`, () => {
    it('adds no listener per request to a service-wide signal (no MaxListenersExceededWarning); close() still withdraws every pending one', async () => {
      const warnings: Error[] = []
      const onWarning = (warning: Error) => warnings.push(warning)
      process.on('warning', onWarning)
      onTestFinished(() => {
        process.off('warning', onWarning)
      })
      const d = await deploy(transport)
      const bus = await d.bus('reviewer')
      // A person who has not decided yet: each review waits until it is withdrawn.
      const withdrawn: string[] = []
      const holding: Reviewer = {
        review: (request, { signal }) =>
          new Promise<never>((_, reject) => {
            signal.addEventListener('abort', () => {
              withdrawn.push(request.requestId)
              reject(signal.reason)
            })
          }),
      }
      const service = serveReviewer({ bus, subjects: d.subjects, reviewer: holding })
      d.defer(() => service.close())
      await service.ready
      const agentBus = await d.bus('agent')
      const count = 25
      for (let i = 0; i < count; i++) {
        const request = approvalRequest(`request_pending_${i}`)
        await agentBus.durablePublish(d.subjects.approvals('payer'), JSON.stringify(request), { msgId: request.requestId })
      }
      await eventually(() => service.inFlight.size === count, 5_000, 'every request to be pending')
      // Node reports the warning on a later tick.
      await sleep(50)
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning').map((w) => w.message)).toEqual([])

      service.close()
      await eventually(() => withdrawn.length === count, 5_000, 'every pending review to be withdrawn')
      expect(service.inFlight.size).toBe(0)
    })
  })
}

for (const transport of TRANSPORTS) {
  describe(`reviewer service: a withdrawn review is told why (${transport.name})`, () => {
    it("the review's signal aborts with a RequestWithdrawnError naming the reason: expired, settled elsewhere, stopping", async () => {
      const d = await deploy(transport)
      const bus = await d.bus('reviewer')
      const why = new Map<string, unknown>()
      const holding: Reviewer = {
        review: (request, { signal }) =>
          new Promise<never>((_, reject) => {
            signal.addEventListener('abort', () => {
              why.set(request.requestId, withdrawalOf(signal.reason))
              reject(signal.reason)
            })
          }),
      }
      const service = serveReviewer({ bus, subjects: d.subjects, reviewer: holding })
      d.defer(() => service.close())
      await service.ready
      const agentBus = await d.bus('agent')
      const expiring = { ...approvalRequest('request_expiring'), deadline: Date.now() + 300 }
      const settled = approvalRequest('request_settled')
      const left = approvalRequest('request_left')
      for (const request of [expiring, settled, left]) {
        await agentBus.durablePublish(d.subjects.approvals('payer'), JSON.stringify(request), { msgId: request.requestId })
      }
      await eventually(() => service.inFlight.size === 3, 5_000, 'every request to be pending')
      await agentBus.durablePublish(d.subjects.approvalDecisions('payer'), JSON.stringify(decisionFor(settled)), {
        msgId: 'settled-1',
      })
      await eventually(() => why.size === 2, 5_000, 'the expired and the settled request to be withdrawn')
      service.close()
      await eventually(() => why.size === 3, 5_000, 'the last request to be withdrawn')
      expect(Object.fromEntries(why)).toEqual({
        request_expiring: 'expired',
        request_settled: 'settled-elsewhere',
        request_left: 'stopping',
      })
    })
  })
}

/** The request ids of the decisions stored on `subject` from now on, as a watcher sees them. */
async function storedDecisions(d: Awaited<ReturnType<typeof deploy>>, subject: string): Promise<string[]> {
  const watcher = await d.bus('watcher')
  const stored: string[] = []
  const subscription = watcher.subscribe(subject, (message) => {
    stored.push((JSON.parse(new TextDecoder().decode(message.data)) as { requestId: string }).requestId)
  })
  d.defer(() => subscription.unsubscribe())
  await subscription.ready
  return stored
}

for (const transport of TRANSPORTS) {
  describe(`reviewer service: the very message delivered again while it is decided (${transport.name})`, () => {
    it('is settled with the first copy: when storing the decision fails, both come back and it is decided again', async () => {
      const d = await deploy(transport)
      const bus = await d.bus('reviewer')
      const requests = d.subjects.approvals('payer')
      const decisions = d.subjects.approvalDecisions('payer')
      // The server redelivers a message whose in-progress acks it lost (an election): here the
      // first request's message is handed to the service a second time while it is being decided.
      let doubled = false
      // The first attempt to store the decision fails (no stream leader, for longer than its retries).
      let attempts = 0
      const faulty = new Proxy(bus, {
        get(target, key) {
          if (key === 'durableConsume') {
            const durableConsume: Bus['durableConsume'] = (subject, handler, options) =>
              target.durableConsume(
                subject,
                async (message) => {
                  if (message.subject === requests && !doubled) {
                    doubled = true
                    await Promise.all([handler(message), handler(message)])
                    return
                  }
                  await handler(message)
                },
                options,
              )
            return durableConsume
          }
          if (key === 'durablePublish') {
            const durablePublish: Bus['durablePublish'] = async (subject, data, options) => {
              if (subject === decisions && attempts++ === 0) throw new Error('no stream leader')
              return target.durablePublish(subject, data, options)
            }
            return durablePublish
          }
          const value = Reflect.get(target, key)
          return typeof value === 'function' ? value.bind(target) : value
        },
      })
      const reviewed: string[] = []
      const failures: unknown[] = []
      const service = serveReviewer({
        bus: faulty,
        subjects: d.subjects,
        reviewer: policyReviewer(() => true, { name: 'policy' }),
        onRequest: (request) => reviewed.push(request.requestId),
        onError: (error) => failures.push(error),
      })
      d.defer(() => service.close())
      await service.ready

      const stored = await storedDecisions(d, decisions)

      const agentBus = await d.bus('agent')
      await agentBus.durablePublish(requests, JSON.stringify(approvalRequest('request_redelivered')), { msgId: 'first' })
      // Without the copy held back, acknowledging it would have swallowed the failed store's nak:
      // the request would never come back, and nobody would decide it.
      await eventually(() => stored.length === 1, 10_000, 'the decision to be stored after the failed attempt')
      expect(doubled).toBe(true)
      expect(failures).toHaveLength(1)
      expect(reviewed).toEqual(['request_redelivered', 'request_redelivered'])
      expect(stored).toEqual(['request_redelivered'])
    })
  })

  describe(`reviewer service: a request that comes again while its decision is being stored (${transport.name})`, () => {
    it('is not reviewed again: one review, one decision (storing can take seconds during an election)', async () => {
      const d = await deploy(transport)
      const bus = await d.bus('reviewer')
      const decisions = d.subjects.approvalDecisions('payer')
      // The decisions' store holds until released, as during a stream leader's election.
      let release: () => void = () => {}
      const released = new Promise<void>((resolve) => {
        release = resolve
      })
      let storing = 0
      const held = new Proxy(bus, {
        get(target, key) {
          if (key === 'durablePublish') {
            const durablePublish: Bus['durablePublish'] = async (subject, data, options) => {
              if (subject === decisions) {
                storing++
                await released
              }
              return target.durablePublish(subject, data, options)
            }
            return durablePublish
          }
          const value = Reflect.get(target, key)
          return typeof value === 'function' ? value.bind(target) : value
        },
      })
      const reviewed: string[] = []
      const service = serveReviewer({
        bus: held,
        subjects: d.subjects,
        reviewer: policyReviewer(() => true, { name: 'policy' }),
        onRequest: (request) => reviewed.push(request.requestId),
      })
      d.defer(() => service.close())
      await service.ready

      const agentBus = await d.bus('agent')
      const publish = (request: ApprovalRequestMessage, msgId: string) =>
        agentBus.durablePublish(d.subjects.approvals('payer'), JSON.stringify(request), { msgId })
      const request = approvalRequest('request_again')
      await publish(request, 'first')
      await eventually(() => storing === 1, 5_000, 'the decision to be in its store')
      // The same request shown again (a host that took the run over), then another request: by the
      // time the second is reviewed, the first's second showing has been handled.
      await publish(request, 'shown-again')
      await publish(approvalRequest('request_next'), 'next')
      await eventually(() => reviewed.includes('request_next'), 5_000, 'the next request to be reviewed')
      expect(reviewed).toEqual(['request_again', 'request_next'])

      const stored = await storedDecisions(d, decisions)
      release()
      await eventually(() => stored.length >= 2, 5_000, 'both decisions to be stored')
      expect(stored.sort()).toEqual(['request_again', 'request_next'])
      expect(reviewed).toEqual(['request_again', 'request_next'])
    })
  })
}
