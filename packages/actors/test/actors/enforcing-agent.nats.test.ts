/**
 * The whole path to a tool host that verifies approvals, over real NATS: an agent whose remote
 * reviewer gets decisions from a reviewer service that signs them, and remote tools discovered on
 * an enforcing host. The agent sends the signed decision it applied with the call, exactly as
 * received; the host checks it and runs the approved call once (with the reviewer's edit when
 * there is one). An agent that applies what the host's policy does not allow (a key not allowed
 * for the tool, or no signature at all) gets the call refused, and the model reads why.
 */

import { discoverTools, remoteReviewer, remoteTool, serveReviewer, serveTools } from '@signalbox/actors'
import {
  type ApprovalDecision,
  type Clock,
  createAgent,
  decideApproval,
  type Reviewer,
  systemClock,
  type Tool,
  tool,
} from '@signalbox/core'
import { MemoryRunStore } from '@signalbox/core/store'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createEvidenceBook, createSigner, createTrustPolicy, newUserSeed, type Signer } from '../../src/trust/index.ts'
import { type Deployment, deferred, deploy, eventually, nats, readByModel, recordEvents } from './harness.ts'

const agentKey = createSigner(newUserSeed())
const tina = createSigner(newUserSeed())
const mallory = createSigner(newUserSeed())
/** The host's policy: only tina may approve drop_claw. */
const hostPolicy = createTrustPolicy({
  keys: { [tina.publicKey]: 'tina', [mallory.publicKey]: 'mallory' },
  reviewers: { drop_claw: [tina.publicKey] },
})

async function clawHost(d: Deployment) {
  const dropped: number[] = []
  const refused: { callId: string; reason: string }[] = []
  const drop: Tool<any> = tool({
    name: 'drop_claw',
    description: 'Drop the claw into a bin. Irreversible.',
    schema: z.object({ bin: z.number().int() }),
    needsApproval: true,
    execute: ({ bin }) => {
      dropped.push(bin)
      return `dropped into bin ${bin}`
    },
  })
  const host = serveTools({
    bus: await d.bus('host'),
    subjects: d.subjects,
    tools: [drop],
    approvals: { trust: hostPolicy },
    onRefused: (call, refusal) => refused.push({ callId: call.callId, reason: refusal.reason }),
  })
  d.defer(() => host.close())
  await host.ready
  return { dropped, refused }
}

/** A reviewer service deciding by call id (an edit is `{ bin }`), signing with `signer` when given. */
async function reviewerService(d: Deployment, signer: Signer | undefined, verdicts: Record<string, true | { bin: number }>) {
  const reviewer: Reviewer = {
    review: async (request) => {
      const verdict = verdicts[request.callId]
      const decision: ApprovalDecision = decideApproval(request, verdict !== undefined, 'tina', Date.now())
      return typeof verdict === 'object' ? { ...decision, arguments: verdict } : decision
    },
  }
  const service = serveReviewer({ bus: await d.bus('reviewer'), subjects: d.subjects, reviewer, ...(signer ? { signer } : {}) })
  d.defer(() => service.close())
  await service.ready
}

async function clawAgent(
  d: Deployment,
  options: { trusting?: Signer },
  script: ConstructorParameters<typeof ScriptedProvider>[0]['script'],
) {
  const bus = await d.bus('agent')
  const evidence = createEvidenceBook()
  const trust = options.trusting
    ? createTrustPolicy({
        keys: { [options.trusting.publicKey]: 'tina', [agentKey.publicKey]: 'claw agent' },
        reviewers: { drop_claw: [options.trusting.publicKey] },
        ownKey: agentKey.publicKey,
      })
    : undefined
  const reviewer = remoteReviewer({ bus, subjects: d.subjects, signer: agentKey, evidence, ...(trust ? { trust } : {}) })
  d.defer(() => reviewer.close())
  const tools = await discoverTools({ bus, subjects: d.subjects, names: ['drop_claw'] })
  const provider = new ScriptedProvider({ script })
  const agent = createAgent({ id: 'claw', provider, tools, reviewer, approvalTimeoutMs: 20_000 })
  return { agent, provider, events: recordEvents(agent) }
}

/** The clock of a second host that resumes a run: ten minutes on (the first owner's lease long expired). */
const laterClock = (): Clock => ({ ...systemClock, now: () => Date.now() + 10 * 60_000 })

describe('an agent calling a tool host that verifies approvals (nats)', () => {
  it('sends the signed decision with the call: the approved call runs once, an edited one with the edit', async () => {
    const d = await deploy(nats)
    const host = await clawHost(d)
    await reviewerService(d, tina, { call_a: true, call_b: { bin: 4 } })
    const claw = await clawAgent(d, { trusting: tina }, [
      { toolCalls: [{ id: 'call_a', name: 'drop_claw', arguments: { bin: 3 } }] },
      { toolCalls: [{ id: 'call_b', name: 'drop_claw', arguments: { bin: 5 } }] },
      { content: 'done' },
    ])

    const result = await claw.agent.run('drop it twice')

    expect(result.output).toBe('done')
    expect(host.dropped).toEqual([3, 4])
    expect(host.refused).toEqual([])
    expect(readByModel(claw.provider, 'call_a')).toBe('dropped into bin 3')
    expect(readByModel(claw.provider, 'call_b')).toMatch(
      /changed the arguments before approving; "drop_claw" ran with \{"bin":4\}\.\ndropped into bin 4$/,
    )
    // The agent applied tina's decisions under her policy name, the signed messages kept as received.
    const decided = claw.events.of('approval.decided')
    expect(decided.map((e) => e.decision.reviewer)).toEqual(['tina', 'tina'])
    expect(decided[1]?.decision.evidence).toMatchObject({
      signer: tina.publicKey,
      editedDigest: expect.any(String),
      arguments: { bin: 4 },
    })
  }, 30_000)

  it('an agent that applies what the host does not allow: a key not allowed for the tool is refused, an unsigned decision too', async () => {
    const d = await deploy(nats)
    const host = await clawHost(d)
    // The agent trusts mallory (a compromised or misconfigured agent); the host does not.
    await reviewerService(d, mallory, { call_m: true })
    const claw = await clawAgent(d, { trusting: mallory }, [
      { toolCalls: [{ id: 'call_m', name: 'drop_claw', arguments: { bin: 3 } }] },
      { content: 'refused' },
    ])
    const result = await claw.agent.run('drop it')
    expect(result.output).toBe('refused')
    expect(readByModel(claw.provider, 'call_m')).toMatch(
      /^Error: "drop_claw" was not executed: its tool host refused the approval this call carries \(key-not-allowed: mallory \(U[A-Z0-9]+\) may not approve or deny calls of drop_claw\)\.$/,
    )
    expect(claw.events.of('tool.end').map((e) => [e.callId, e.isError])).toEqual([['call_m', true]])

    // Decisions nobody signs (an agent and a reviewer in unsigned mode): nothing to verify, nothing runs.
    const d2 = await deploy(nats)
    const host2 = await clawHost(d2)
    await reviewerService(d2, undefined, { call_u: true })
    const unsigned = await clawAgent(d2, {}, [
      { toolCalls: [{ id: 'call_u', name: 'drop_claw', arguments: { bin: 3 } }] },
      { content: 'no' },
    ])
    await unsigned.agent.run('drop it')
    expect(readByModel(unsigned.provider, 'call_u')).toMatch(/^Error: "drop_claw" was not executed: it needs a person's approval/)
    expect([...host.dropped, ...host2.dropped]).toEqual([])
    expect([...host.refused, ...host2.refused]).toEqual([
      { callId: 'call_m', reason: 'key-not-allowed' },
      { callId: 'call_u', reason: 'missing' },
    ])
  }, 30_000)

  it('a stored run resumed mid-call sends the signed decision again from its checkpoint: the host answers the redelivery with the first result, the tool runs once', async () => {
    const d = await deploy(nats)
    const release = deferred()
    const charges: number[] = []
    const charge: Tool<any> = tool({
      name: 'charge',
      description: 'Charge the card. Idempotent by call.',
      schema: z.object({ cents: z.number().int() }),
      needsApproval: true,
      idempotent: true,
      execute: async ({ cents }) => {
        charges.push(cents)
        await release.promise
        return `charged ${cents}`
      },
    })
    const host = serveTools({
      bus: await d.bus('host'),
      subjects: d.subjects,
      tools: [charge],
      approvals: { trust: createTrustPolicy({ keys: { [tina.publicKey]: 'tina' }, reviewers: { charge: [tina.publicKey] } }) },
    })
    d.defer(() => host.close())
    await host.ready
    await reviewerService(d, tina, { call_charge: true })

    const agentOn = async (
      name: string,
      store: MemoryRunStore,
      clock: Clock,
      script: ConstructorParameters<typeof ScriptedProvider>[0]['script'],
    ) => {
      const bus = await d.bus(name)
      const reviewer = remoteReviewer({ bus, subjects: d.subjects, signer: agentKey })
      d.defer(() => reviewer.close())
      // Declared idempotent here: a resumed run calls it again (with the same idempotency key).
      const remote = {
        ...remoteTool({
          bus,
          subjects: d.subjects,
          name: 'charge',
          description: charge.description,
          parameters: charge.parameters,
          needsApproval: true,
        }),
        idempotent: true,
      }
      const provider = new ScriptedProvider({ script })
      const agent = createAgent({
        id: 'cashier',
        provider,
        tools: [remote],
        reviewer,
        store,
        clock,
        hostId: name,
        approvalTimeoutMs: 60_000,
      })
      return { agent, provider }
    }
    const storeA = new MemoryRunStore()
    const first = await agentOn('first-host', storeA, systemClock, [
      { toolCalls: [{ id: 'call_charge', name: 'charge', arguments: { cents: 500 } }] },
      { content: 'never read' },
    ])
    const handle = first.agent.start('charge 5 euros')
    handle.result.catch(() => {})
    await eventually(() => charges.length === 1, 10_000, 'the call running on the host')
    // The first host dies here: the second resumes the run from what was stored while the call ran.
    const signal = new AbortController().signal
    const stored = await storeA.load(handle.runId, { signal })
    expect(stored?.checkpoint.ledger).toMatchObject([{ callId: 'call_charge', state: 'started' }])
    const later = laterClock()
    const storeB = new MemoryRunStore({ clock: later })
    const checkpoint = stored?.checkpoint as NonNullable<typeof stored>['checkpoint']
    await storeB.create(checkpoint, { signal })
    const messages = await storeA.readMessages(handle.runId, { length: checkpoint.transcript.length, signal })
    await storeB.appendMessages(handle.runId, { from: 0, epoch: checkpoint.lease?.epoch ?? 1, messages, signal })
    first.agent.cancel('the first host is gone')
    const second = await agentOn('second-host', storeB, later, [{ content: 'charged once' }])
    const resumed = await second.agent.resume(handle.runId)
    await eventually(() => host.running === 1, 5_000, 'the first call still running')
    release.resolve()
    const result = await resumed.result
    expect(result).toMatchObject({ status: 'done', output: 'charged once' })
    // The resumed call carried the approval (else APPROVAL_REQUIRED) and got the first call's result.
    expect(readByModel(second.provider, 'call_charge')).toBe('charged 500')
    expect(charges).toEqual([500])
  }, 30_000)
})
