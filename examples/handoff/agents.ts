/**
 * A support desk as two agents: triage talks to the person first and hands the conversation to
 * billing when it is about money. `handoffTool('billing')` is a tool like any other; when the model
 * calls it, triage's run ends there and billing continues with the conversation so far.
 */
import { handoffFilters, handoffTool } from '@signalbox/actors/system'
import { createAgent, type Provider, tool } from '@signalbox/core'
import { z } from 'zod'

export const TRIAGE_PROMPT = 'You are the triage desk of a train company. Send money matters to billing.'
export const BILLING_PROMPT = 'You are the billing desk. Look the charges up before you answer.'

export function createTriageAgent(provider: Provider) {
  return createAgent({
    id: 'triage',
    provider,
    instructions: TRIAGE_PROMPT,
    // Billing gets the person's and triage's words, not triage's tool calls.
    tools: [handoffTool('billing', { filter: handoffFilters.withoutTools })],
  })
}

/** The charges on file, by booking. */
export const CHARGES: Record<string, { amount: string; count: number }> = {
  'T101-14B': { amount: 'ARS 21,500', count: 2 },
}

export function createBillingAgent(provider: Provider) {
  const findCharges = tool({
    name: 'find_charges',
    description: 'The charges of one booking.',
    schema: z.object({ booking: z.string() }),
    execute: ({ booking }) => {
      const charge = CHARGES[booking]
      return charge ? `${charge.count} charges of ${charge.amount} on ${booking}` : `No charges on ${booking}`
    },
  })
  return createAgent({ id: 'billing', provider, instructions: BILLING_PROMPT, tools: [findCharges] })
}
