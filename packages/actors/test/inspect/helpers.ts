/** Shared pieces of the inspection unit tests: an agent whose run touches every private thing. */

import type { InspectorWireEvent } from '@signalbox/actors/inspect'
import { createAgent, type Hooks, policyReviewer, type Reviewer, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { z } from 'zod'

/** Strings that must never reach an inspector unless contents are opted in. */
export const SECRETS = {
  input: 'INPUT-SECRET-7731',
  instructions: 'INSTRUCTIONS-SECRET-5523',
  argument: 'ARG-SECRET-9917',
  rawId: '12.345.678',
  maskedId: 'DNI ***',
  answer: 'ANSWER-SECRET-4410',
  reason: 'REASON-SECRET-2208',
} as const

export function secretsIn(events: unknown): string[] {
  const text = JSON.stringify(events)
  return Object.values(SECRETS).filter((secret) => text.includes(secret))
}

export const maskIds: Hooks = {
  afterToolExecution: async ({ output }) => output.replace(/DNI [\d.]+/g, 'DNI ***'),
}

export function lookupTool(options: { needsApproval?: boolean } = {}) {
  return tool({
    name: 'lookup',
    description: 'Look a customer up.',
    schema: z.object({ customer: z.string() }),
    ...(options.needsApproval === false ? {} : { needsApproval: true }),
    execute: async ({ customer }) => `Customer ${customer}: DNI ${SECRETS.rawId}`,
  })
}

export function privateAgent(options: {
  inspect: Parameters<typeof createAgent>[0]['inspect']
  reviewer?: Reviewer
  id?: string
  tools?: ReturnType<typeof lookupTool>[]
}) {
  const provider = new ScriptedProvider({
    script: [
      { toolCalls: [{ name: 'lookup', arguments: { customer: SECRETS.argument } }] },
      { content: `Found. ${SECRETS.answer}` },
    ],
  })
  return createAgent({
    id: options.id ?? 'clerk',
    provider,
    instructions: `You look customers up. ${SECRETS.instructions}`,
    tools: options.tools ?? [lookupTool()],
    hooks: maskIds,
    reviewer: options.reviewer ?? policyReviewer(() => ({ approved: true, reason: SECRETS.reason }), { name: 'policy' }),
    inspect: options.inspect,
  })
}

export const ofType = <T extends InspectorWireEvent['type']>(events: InspectorWireEvent[], type: T) =>
  events.filter((event): event is Extract<InspectorWireEvent, { type: T }> => event.type === type)

/** Waits a macrotask: the inspector releases held registrations in a microtask. */
export const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 0))
