import { createAgent, type MemoryAuditLog, policyReviewer, type Reviewer, ScriptedReviewer, tool } from '@signalbox/core'
import { callDigest } from '@signalbox/core/protocol'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { SimulatedClock, waitFor } from 'xstate'
import { z } from 'zod'
import { payTool, setup } from './approval-fixture.ts'
import { deferred, eventsOf, runFailure } from './helpers.ts'

describe('approval requests', () => {
  it('show the exact call, its ids, the digest of the arguments and the deadline', async () => {
    let reviewer!: ScriptedReviewer
    const s = setup({ reviewer: (clock) => (reviewer = new ScriptedReviewer([true], { clock })), approvalTimeoutMs: 30_000 })
    await s.agent.run('pay ACME', { runId: 'run_x' })
    const [request] = reviewer.requests
    expect(request).toEqual({
      requestId: 'request_1',
      agentId: 'agent',
      runId: 'run_x',
      runPath: [],
      callId: 'c1',
      toolName: 'pay',
      arguments: { to: 'ACME', amount: 250 },
      digest: callDigest('pay', { to: 'ACME', amount: 250 }),
      deadline: 1_000_000 + 30_000,
      requestedAt: 1_000_000,
      // The tool's JSON Schema, for a reviewer to check an edit against; not part of the digest.
      parameters: {
        type: 'object',
        properties: { to: { type: 'string' }, amount: { type: 'number' } },
        required: ['to', 'amount'],
      },
      // What the tool does and what led to the call, for the reviewer; not part of the digest either.
      description: 'Pay someone. Irreversible.',
      context: { input: 'pay ACME' },
    })
    expect(request?.digest).toMatch(/^sha256:[0-9a-f]{64}$/)
    expect(callDigest('pay', { amount: 250, to: 'ACME' })).toBe(request?.digest)
    expect(callDigest('pay', { to: 'ACME', amount: 251 })).not.toBe(request?.digest)
  })

  it("tell the reviewer why: the run's input and the model's last text before the call, each cut to 2,000 characters", async () => {
    const reviewer = new ScriptedReviewer([true])
    const long = `Pay ACME ${'x'.repeat(3_000)}`
    const provider = new ScriptedProvider({
      script: [
        { content: 'Let me look up the invoice first.', toolCalls: [{ id: 'c0', name: 'lookup', arguments: {} }] },
        // The reply that asks for the payment says nothing: the text before it is the last one.
        { toolCalls: [{ id: 'c1', name: 'pay', arguments: { to: 'ACME', amount: 250 } }] },
        { content: 'Paid.', toolCalls: [] },
      ],
    })
    const lookup = tool({ name: 'lookup', description: 'Look up.', schema: z.object({}), execute: () => 'invoice 7: 250' })
    const agent = createAgent({
      provider,
      tools: [lookup, payTool().tool],
      reviewer,
    })
    await agent.run(long)
    const [request] = reviewer.requests
    expect(request?.context?.lastText).toBe('Let me look up the invoice first.')
    expect(request?.context?.input).toHaveLength(2_000)
    expect(request?.context?.input?.endsWith('…')).toBe(true)
    expect(request?.description).toBe('Pay someone. Irreversible.')
    // Advisory: the digest covers the call only.
    expect(request?.digest).toBe(callDigest('pay', { to: 'ACME', amount: 250 }))
  })

  it("carry a copy of the tool's schema: freezing the event leaves the tool's own object alone", async () => {
    const pay = payTool()
    const s = setup({ reviewer: policyReviewer(() => true), tools: [pay.tool] })
    await s.agent.run('pay')
    const request = eventsOf(s.events, 'approval.requested')[0]?.request
    expect(request?.parameters).toEqual(pay.tool.parameters)
    expect(request?.parameters).not.toBe(pay.tool.parameters)
    expect(Object.isFrozen(pay.tool.parameters)).toBe(false)
    expect(Object.isFrozen(pay.tool.parameters.properties)).toBe(false)
  })

  it('have a declared default deadline of five minutes', async () => {
    const s = setup({ reviewer: policyReviewer(() => true) })
    await s.agent.run('pay')
    const request = eventsOf(s.events, 'approval.requested')[0]?.request
    expect((request?.deadline ?? 0) - (request?.requestedAt ?? 0)).toBe(5 * 60_000)
  })

  it('a predicate on the arguments decides which calls need approval', async () => {
    const clock = new SimulatedClock()
    const pay = payTool((args) => args.amount > 100)
    const provider = new ScriptedProvider({
      script: [
        {
          toolCalls: [
            { id: 'small', name: 'pay', arguments: { to: 'A', amount: 50 } },
            { id: 'big', name: 'pay', arguments: { to: 'B', amount: 500 } },
          ],
        },
        { content: 'over' },
      ],
    })
    const reviewer = new ScriptedReviewer([true], { clock })
    await createAgent({ provider, tools: [pay.tool], reviewer, clock }).run('pay')
    expect(reviewer.requests.map((r) => r.callId)).toEqual(['big'])
    expect(pay.paid.map((p) => p.to)).toEqual(['A', 'B'])
  })
})

describe('decisions', () => {
  it('approve: the tool runs; granted is audited with who, what they saw and the latency', async () => {
    const s = setup({ reviewer: (clock) => new ScriptedReviewer([true], { clock, delayMs: 1_500, name: 'tina' }) })
    const { agent, events } = s
    const handle = agent.start('pay')
    await waitFor(handle.actor, (snap) => snap.hasTag('human'))
    expect(s.paid).toEqual([])
    s.clock.increment(1_500)
    await handle.result
    expect(s.paid).toEqual([{ to: 'ACME', amount: 250 }])
    expect(eventsOf(events, 'approval.decided')[0]).toMatchObject({
      decision: { approved: true, reviewer: 'tina' },
      latencyMs: 1_500,
    })
    expect((agent.audit as MemoryAuditLog).entries).toEqual([
      expect.objectContaining({
        kind: 'approval.granted',
        actor: 'tina',
        callId: 'c1',
        toolName: 'pay',
        shown: { to: 'ACME', amount: 250 },
        digest: callDigest('pay', { to: 'ACME', amount: 250 }),
        decision: 'approved',
        requestedAt: 1_000_000,
        decidedAt: 1_001_500,
        latencyMs: 1_500,
      }),
    ])
  })

  it("decidedAt is the reviewer's clock; releasedAt is the agent's, when it let the call go", async () => {
    // A remote reviewer whose clock runs 10 minutes behind the agent's.
    const skewed: Reviewer = {
      review: async (request) => ({
        requestId: request.requestId,
        callId: request.callId,
        digest: request.digest,
        approved: true,
        reviewer: 'tina',
        decidedAt: request.requestedAt - 600_000 + 2_000,
      }),
    }
    const s = setup({ reviewer: skewed })
    await s.agent.run('pay')
    expect(s.paid).toEqual([{ to: 'ACME', amount: 250 }])
    expect(s.audit()).toEqual([
      expect.objectContaining({
        kind: 'approval.granted',
        requestedAt: 1_000_000,
        decidedAt: 1_000_000 - 598_000,
        latencyMs: -598_000,
        releasedAt: 1_000_000,
      }),
    ])
  })

  it('deny with a reason: the tool never runs and the model reads the reason', async () => {
    const s = setup({
      reviewer: new ScriptedReviewer([{ approved: false, reason: 'Tina said no, ask her first' }], { name: 'tina' }),
    })
    await s.agent.run('pay')
    expect(s.paid).toEqual([])
    expect(s.read()).toContain('Tina said no, ask her first')
    expect(eventsOf(s.events, 'tool.end')[0]).toMatchObject({ isError: true, outcome: 'approval_denied' })
    expect(s.audit()).toEqual([
      expect.objectContaining({
        kind: 'approval.denied',
        actor: 'tina',
        decision: 'denied',
        reason: 'Tina said no, ask her first',
      }),
    ])
  })

  it('one denied call does not drop the approved ones in the same reply', async () => {
    const s = setup({
      calls: [
        { id: 'c1', amount: 10 },
        { id: 'c2', amount: 20 },
        { id: 'c3', amount: 30 },
      ],
      reviewer: policyReviewer((r) =>
        (r.arguments as { amount: number }).amount === 20 ? { approved: false, reason: 'no' } : true,
      ),
    })
    await s.agent.run('pay')
    expect(s.paid.map((p) => p.amount)).toEqual([10, 30])
    expect([s.read('c1'), s.read('c3')]).toEqual(['paid 10 to ACME', 'paid 30 to ACME'])
    expect(s.read('c2')).toContain('no')
  })

  it('no decision by the deadline: denied by default, recorded as a timeout by the system', async () => {
    const signal = deferred<AbortSignal>()
    const reviewer: Reviewer = {
      review: (_request, options) => {
        signal.resolve(options.signal)
        return new Promise(() => {})
      },
    }
    const s = setup({ reviewer, approvalTimeoutMs: 60_000 })
    const handle = s.agent.start('pay')
    const reviewerSignal = await signal.promise
    s.clock.increment(59_999)
    expect(handle.actor.getSnapshot().hasTag('human')).toBe(true)
    s.clock.increment(1)
    await handle.result
    expect(reviewerSignal.aborted).toBe(true)
    expect(s.paid).toEqual([])
    expect(s.read()).toMatch(/nobody approved "pay" within 60s/)
    expect(s.read()).toMatch(/denied by default/)
    expect(eventsOf(s.events, 'approval.timeout')).toHaveLength(1)
    expect(eventsOf(s.events, 'approval.decided')).toEqual([])
    expect(eventsOf(s.events, 'tool.end')[0]).toMatchObject({ outcome: 'approval_timeout', isError: true })
    expect(s.audit()).toEqual([
      expect.objectContaining({
        kind: 'approval.timeout',
        actor: 'system',
        decision: 'timeout',
        decidedAt: 1_060_000,
        latencyMs: 60_000,
      }),
    ])
  })

  it('cancelling the run withdraws the pending request (the reviewer signal aborts)', async () => {
    const signal = deferred<AbortSignal>()
    const reviewer: Reviewer = {
      review: (_request, options) => {
        signal.resolve(options.signal)
        return new Promise(() => {})
      },
    }
    const s = setup({ reviewer })
    const handle = s.agent.start('pay')
    const reviewerSignal = await signal.promise
    handle.cancel('changed my mind')
    expect(reviewerSignal.aborted).toBe(true)
    expect((await runFailure(handle.result)).code).toBe('RUN_CANCELLED')
    expect(s.paid).toEqual([])
    expect(eventsOf(s.events, 'approval.timeout')).toEqual([])
  })

  it('a needsApproval predicate that throws fails the run closed, naming it', async () => {
    const clock = new SimulatedClock()
    const paid: unknown[] = []
    const risky = tool({
      name: 'pay',
      description: 'Pay.',
      schema: z.object({ to: z.string(), amount: z.number() }),
      needsApproval: () => {
        throw new Error('limits service down')
      },
      execute: (args) => paid.push(args),
    })
    const provider = new ScriptedProvider({ script: [{ toolCalls: [{ name: 'pay', arguments: { to: 'A', amount: 1 } }] }] })
    const error = await runFailure(
      createAgent({ provider, tools: [risky], clock, reviewer: policyReviewer(() => true) }).run('pay'),
    )
    expect(error.code).toBe('HOOK_FAILED')
    expect(error.message).toMatch(/needsApproval.*limits service down/)
    expect(paid).toEqual([])
  })

  it('no reviewer configured: denied at once with a clear message, as unavailable (not a timeout)', async () => {
    const s = setup()
    await s.agent.run('pay')
    expect(s.paid).toEqual([])
    expect(s.read()).toMatch(/needs a person's approval/)
    expect(s.read()).toMatch(/no reviewer is configured/)
    expect(s.clock.now()).toBe(1_000_000)
    // No deadline passed: the call's outcome says why it did not run.
    expect(eventsOf(s.events, 'approval.unavailable')).toHaveLength(1)
    expect(eventsOf(s.events, 'approval.timeout')).toEqual([])
    expect(eventsOf(s.events, 'tool.end')[0]).toMatchObject({ outcome: 'approval_unavailable', isError: true })
    expect(s.audit()).toEqual([
      expect.objectContaining({ kind: 'approval.unavailable', actor: 'system', decision: 'unavailable' }),
    ])
  })
})
