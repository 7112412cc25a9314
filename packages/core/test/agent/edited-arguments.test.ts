/** Approve with edited arguments: validated by the agent, run as edited, told to the model, audited. */

import type { ApprovalDecision, ApprovalRequest, Reviewer } from '@signalbox/core'
import { createAgent, tool } from '@signalbox/core'
import { callDigest } from '@signalbox/core/protocol'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { setup } from './approval-fixture.ts'
import { eventsOf } from './helpers.ts'

/** A reviewer that approves with `edited` as the arguments. */
const editingReviewer = (edited: unknown): Reviewer => ({
  review: async (request: ApprovalRequest): Promise<ApprovalDecision> => ({
    requestId: request.requestId,
    callId: request.callId,
    digest: request.digest,
    approved: true,
    arguments: edited,
    reviewer: 'tina',
    decidedAt: request.requestedAt + 40,
  }),
})

describe('approval with edited arguments', () => {
  it('runs the edited call, tells the model, and audits the call shown, the edit and the digest of what ran', async () => {
    const s = setup({ reviewer: editingReviewer({ to: 'ACME', amount: 25 }) })
    await s.agent.run('pay ACME')
    expect(s.paid).toEqual([{ to: 'ACME', amount: 25 }])
    expect(s.read()).toBe(
      'Note: the reviewer changed the arguments before approving; "pay" ran with {"to":"ACME","amount":25}.\npaid 25 to ACME',
    )
    expect(s.audit()).toEqual([
      expect.objectContaining({
        kind: 'approval.granted',
        actor: 'tina',
        decision: 'approved',
        shown: { to: 'ACME', amount: 250 },
        digest: callDigest('pay', { to: 'ACME', amount: 250 }),
        edited: { to: 'ACME', amount: 25 },
        editedDigest: callDigest('pay', { to: 'ACME', amount: 25 }),
        latencyMs: 40,
      }),
    ])
    expect(eventsOf(s.events, 'tool.start')[0]?.arguments).toEqual({ to: 'ACME', amount: 25 })
    expect(eventsOf(s.events, 'tool.end')[0]?.outcome).toBe('executed')
  })

  it('refuses edited arguments the tool schema rejects: nothing runs, the model reads why', async () => {
    const s = setup({ reviewer: editingReviewer({ to: 'ACME', amount: 'lots' }) })
    await s.agent.run('pay ACME')
    expect(s.paid).toEqual([])
    expect(s.read()).toMatch(/^Not executed: tina approved "pay" with edited arguments, but they are invalid:\n- /)
    expect(s.read()).toContain('amount')
    const [entry] = s.audit()
    expect(entry).toMatchObject({ kind: 'approval.rejected', actor: 'tina', edited: { to: 'ACME', amount: 'lots' } })
    expect(entry?.reason).toMatch(/^the edited arguments are invalid: /)
    expect(eventsOf(s.events, 'tool.end')[0]?.outcome).toBe('approval_denied')
    expect(eventsOf(s.events, 'tool.start')).toEqual([])
  })

  it('an approval without edits runs the call as shown, with no note', async () => {
    const s = setup({ reviewer: editingReviewer(undefined) })
    await s.agent.run('pay ACME')
    expect(s.paid).toEqual([{ to: 'ACME', amount: 250 }])
    expect(s.read()).toBe('paid 250 to ACME')
    expect(s.audit()[0]).not.toHaveProperty('edited')
  })

  it('checks the edited arguments against the tool once per decision', async () => {
    const checked: unknown[] = []
    const pay = tool({
      name: 'pay',
      description: 'Pay someone. Irreversible.',
      schema: z.object({ to: z.string(), amount: z.number() }).refine((args) => {
        checked.push(args.amount)
        return true
      }),
      needsApproval: true,
      execute: (args) => `paid ${args.amount} to ${args.to}`,
    })
    for (const edited of [
      { to: 'ACME', amount: 25 },
      { to: 'ACME', amount: -1, extra: 'x' },
    ]) {
      checked.length = 0
      const provider = new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'c1', name: 'pay', arguments: { to: 'ACME', amount: 250 } }] }, { content: 'over' }],
      })
      await createAgent({ provider, tools: [pay], reviewer: editingReviewer(edited) }).run('pay ACME')
      // The model's call, then the edit: once each.
      expect(checked).toEqual([250, edited.amount])
    }
  })
})
