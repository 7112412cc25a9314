/**
 * `node --import tsx bench/lib/parked-runs-child.ts <storeDir | kv:<bucket>> <count> [natsUrl]`:
 * starts `count` runs on a FileRunStore (or a KvRunStore), each parked on an approval nobody
 * answers, prints `parked` once every run's wait is stored, and waits to be killed (SIGKILL, by
 * the resume bench).
 */
import { createAgent, type Reviewer } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { PARKED_AGENT, PARKED_HOST, payTool, storeAt } from './parked-runs.ts'

const [where, countText, natsUrl] = process.argv.slice(2) as [string, string, string | undefined]
const count = Number(countText)
const { store } = await storeAt(where, natsUrl)
const never: Reviewer = {
  review: (_request, { signal }) =>
    new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true })),
}
const agent = createAgent({
  id: PARKED_AGENT,
  provider: new ScriptedProvider({
    script: () => ({ toolCalls: [{ name: 'pay', arguments: { invoice: 'P-1' } }] }),
    record: false,
  }),
  tools: [payTool],
  reviewer: never,
  store,
  hostId: PARKED_HOST,
  leaseMs: 600_000,
  approvalTimeoutMs: 3_600_000,
})
let parked = 0
agent.on('approval.requested', () => {
  parked++
  // Shown only once the wait is stored (a synced write): every run is on disk, waiting.
  if (parked === count) console.log('parked')
})
for (let i = 0; i < count; i++) agent.start('pay', { runId: `run_parked_${i}` }).result.catch(() => {})
