/** What the resume bench and its child share: the agent whose runs are parked on approvals. */
import { tool } from '@signalbox/core'
import { z } from 'zod'

export const PARKED_AGENT = 'parked'
/** The child's host id: the resuming process uses it too, so its claims are renewals (no lease wait). */
export const PARKED_HOST = 'bench-parked-host'

export const payTool = tool({
  name: 'pay',
  description: 'Pays (irreversible).',
  schema: z.object({ invoice: z.string() }),
  needsApproval: true,
  execute: ({ invoice }) => `paid ${invoice}`,
})
