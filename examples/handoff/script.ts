/**
 * The hand-off conversation as data: triage hands over, billing looks the charge up and answers.
 * Billing's first step checks what it was sent: its own prompt and the words, no tool calls.
 */
import type { ScriptStep } from '@signalbox/core/testing'
import { allOf, lastToolResult, lastUserMessage, systemPrompt } from '../shared/expect.ts'
import { BILLING_PROMPT, TRIAGE_PROMPT } from './agents.ts'

export const TRIAGE_MODEL = 'scripted-triage'
export const BILLING_MODEL = 'scripted-billing'

export const HANDOFF_PROMPT = 'I was charged twice for booking T101-14B.'
export const HANDOFF_ANSWER = 'You were charged twice (2 × ARS 21,500) for T101-14B. I refunded the second charge.'

/** What triage says as it hands over: billing reads it, without the tool call. */
const HANDED_OVER_WORDS = 'That is a billing question: passing you to billing.'

export const triageScript: ScriptStep[] = [
  {
    expect: allOf(systemPrompt(TRIAGE_PROMPT), lastUserMessage(HANDOFF_PROMPT)),
    content: HANDED_OVER_WORDS,
    toolCalls: [{ name: 'transfer_to_billing', arguments: { reason: 'a double charge' } }],
  },
]

export const billingScript: ScriptStep[] = [
  {
    expect: allOf(systemPrompt(BILLING_PROMPT), (request) => {
      const seen = request.messages.map((m) => `${m.role}: ${m.content}`)
      const wanted = [`system: ${BILLING_PROMPT}`, `user: ${HANDOFF_PROMPT}`, `assistant: ${HANDED_OVER_WORDS}`]
      return JSON.stringify(seen) === JSON.stringify(wanted)
        ? true
        : `billing expected ${wanted.join(' | ')}; got ${seen.join(' | ')}`
    }),
    toolCalls: [{ name: 'find_charges', arguments: { booking: 'T101-14B' } }],
  },
  { expect: lastToolResult('2 charges of ARS 21,500'), content: HANDOFF_ANSWER },
]
