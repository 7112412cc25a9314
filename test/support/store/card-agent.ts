/** An agent whose tool returns a card number in clear and whose `afterToolExecution` hook masks it, when let through. */

import { type Agent, createAgent, tool } from '@signalbox/core'
import type { RunStore } from '@signalbox/core/store'
import { ScriptedProvider } from '@signalbox/core/testing'
import { z } from 'zod'

export const CARD = '4111 1111 1111 1111'
export const MASKED = 'card **** 1111'

interface Gate {
  entered: Promise<void>
  release(): void
}

export function gate(): Gate & { enter(): void; open: Promise<void> } {
  let enter: () => void = () => {}
  let release: () => void = () => {}
  const entered = new Promise<void>((resolve) => {
    enter = resolve
  })
  const open = new Promise<void>((resolve) => {
    release = resolve
  })
  return { entered, enter, open, release }
}

/** An agent whose tool returns a card number in clear and whose hook masks it, once `hook` is released. */
export function cardAgent(store: RunStore, hook: ReturnType<typeof gate>, options: { storeRawToolOutput?: boolean } = {}): Agent {
  const lookup = tool({
    name: 'lookup_card',
    description: 'Looks up the card on file.',
    schema: z.object({}),
    execute: () => `card ${CARD}`,
  })
  return createAgent({
    id: 'billing',
    hostId: 'host-1',
    provider: new ScriptedProvider({
      script: [{ toolCalls: [{ id: 'c1', name: 'lookup_card', arguments: {} }] }, { content: 'done' }],
    }),
    tools: [lookup],
    store,
    // Renewed every 10 ms: the hook below sees several lease renewals written.
    leaseMs: 30,
    hooks: {
      afterToolExecution: async ({ output }) => {
        hook.enter()
        await hook.open
        return output.replace(/\d{4} \d{4} \d{4} (\d{4})/, '**** $1')
      },
    },
    ...options,
  })
}
