/**
 * Hand-off: a tool returns `handoff(to)`; the run ends there and the conversation (filtered)
 * continues at the other agent, wherever it lives. The result says who finished.
 */

import { type HandoffFilter, handoffFilters, handoffTool } from '@signalbox/actors/system'
import type { Message } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { agent, answer, call, ofType, TOPOLOGIES, topology } from './harness.ts'

const PROMPT = 'I was charged twice for my ticket.'
const TRIAGE_PROMPT = 'You are triage. Route each person to the right desk.'
const BILLING_PROMPT = 'You are billing. Fix charges.'

async function handOver(
  name: (typeof TOPOLOGIES)[number],
  filter: HandoffFilter | undefined,
  expectSent: (messages: Message[]) => void,
) {
  const t = await topology(name)
  const triage = agent({
    id: 'triage',
    instructions: TRIAGE_PROMPT,
    tools: [handoffTool('billing', filter ? { filter } : {})],
    script: [call('transfer_to_billing', { reason: 'a double charge' }, { content: 'Let me get billing for you.' })],
  })
  const billing = agent({
    id: 'billing',
    instructions: BILLING_PROMPT,
    script: [
      answer('I refunded the second charge.', {
        expect: (request) => {
          expectSent(request.messages)
          return true
        },
      }),
    ],
  })
  t.parent.add(triage.agent)
  t.child.add(billing.agent)
  await t.start()
  const result = await t.parent.run('triage', PROMPT)
  triage.provider.assertDone()
  billing.provider.assertDone()
  return { t, result, triage, billing }
}

describe.each(TOPOLOGIES)('handoffTool (%s)', (name) => {
  it('continues at the target with the filtered history; the result says who finished', async () => {
    const { result, triage, billing } = await handOver(name, handoffFilters.withoutTools, (messages) => {
      // Billing's own prompt, then the person's and triage's words only: no tool call, no tool result.
      expect(messages).toEqual([
        { role: 'system', content: BILLING_PROMPT },
        { role: 'user', content: PROMPT },
        { role: 'assistant', content: 'Let me get billing for you.' },
      ])
    })
    expect(result.status).toBe('done')
    expect(result.output).toBe('I refunded the second charge.')
    expect(result.agentId).toBe('triage')
    expect(result.finishedBy).toBe('billing')
    expect(result.handoffs).toEqual(['billing'])
    // Triage's run ended with the hand-off, not with an answer of its own.
    expect(ofType(triage.events, 'run.end')[0]).toMatchObject({ status: 'done', output: '' })
    expect(ofType(triage.events, 'tool.end')[0]).toMatchObject({
      toolName: 'transfer_to_billing',
      output: 'Transferred the conversation to "billing".',
    })
    expect(ofType(billing.events, 'run.end')[0]).toMatchObject({ status: 'done', output: 'I refunded the second charge.' })
  })

  it('by default the whole conversation goes along, but not the first agent’s system prompt', async () => {
    await handOver(name, undefined, (messages) => {
      const text = JSON.stringify(messages)
      expect(text).not.toContain(TRIAGE_PROMPT)
      expect(messages[0]).toEqual({ role: 'system', content: BILLING_PROMPT })
      expect(messages.at(-1)).toMatchObject({ role: 'tool', content: 'Transferred the conversation to "billing".' })
      expect(
        messages.filter((m) => m.role === 'assistant' && m.tool_calls?.[0]?.function.name === 'transfer_to_billing'),
      ).toHaveLength(1)
    })
  })

  it('lastUserMessage sends only the person’s last words', async () => {
    await handOver(name, handoffFilters.lastUserMessage, (messages) => {
      expect(messages).toEqual([
        { role: 'system', content: BILLING_PROMPT },
        { role: 'user', content: PROMPT },
      ])
    })
  })
})
