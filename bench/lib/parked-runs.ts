/** What the resume bench and its child share: the agent whose runs are parked on approvals. */
import { connectNatsBus } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import { tool } from '@signalbox/core'
import { FileRunStore, type RunStore } from '@signalbox/core/store'
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

/** `kv:<bucket>` (on the NATS server at `natsUrl`), else a FileRunStore directory; `close` ends its connection. */
export async function storeAt(where: string, natsUrl: string | undefined): Promise<{ store: RunStore; close(): Promise<void> }> {
  if (!where.startsWith('kv:')) return { store: new FileRunStore({ directory: where }), close: async () => {} }
  const bus = await connectNatsBus({ servers: natsUrl ?? 'nats://127.0.0.1:4222', name: 'bench-parked' })
  const bucket = where.slice(3)
  return {
    store: new KvRunStore({ connection: bus.connection, bucket }),
    close: async () => {
      await bus.connection.request(`$JS.API.STREAM.DELETE.KV_${bucket}`).catch(() => {})
      await bus.close()
    },
  }
}
