/**
 * Checkpoints written before the run's worker (issue 13), when every wait was an invoked actor
 * of its own and the stored snapshot held that child with its input, still resume: the children
 * are replaced by the worker, which restarts the work of the state the run was saved in with the
 * same inputs (the same approval request id and absolute deadline; the model called again).
 * The fixture was written by the agent machine of that time (one child per wait).
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type ApprovalRequest, createAgent, decideApproval, type Message, tool } from '../../src/index.ts'
import { type Checkpoint, MemoryRunStore } from '../../src/store/index.ts'
import { ScriptedProvider } from '../../src/testing/index.ts'

interface Stored {
  checkpoint: Checkpoint
  messages: Message[]
}
const fixture = JSON.parse(
  readFileSync(new URL('./fixtures/checkpoints-per-wait-children.json', import.meta.url), 'utf8'),
) as Record<'approval' | 'model', Stored>

const signal = new AbortController().signal
/** The fixture's time (its lease long expired), then running in real time. */
function laterClock(checkpoint: Checkpoint) {
  const base = checkpoint.savedAt + 10 * 60_000
  const started = Date.now()
  return {
    now: () => base + (Date.now() - started),
    setTimeout: (fn: () => void, ms: number) => setTimeout(fn, ms),
    clearTimeout: (id: unknown) => clearTimeout(id as ReturnType<typeof setTimeout>),
  }
}

async function storeWith(stored: Stored, clock: ReturnType<typeof laterClock>): Promise<MemoryRunStore> {
  const store = new MemoryRunStore({ clock })
  await store.create(stored.checkpoint, { signal })
  await store.appendMessages(stored.checkpoint.runId, {
    from: 0,
    epoch: stored.checkpoint.lease?.epoch ?? 1,
    messages: stored.messages,
    signal,
  })
  return store
}

const pay = (paid: unknown[]) =>
  tool({
    name: 'pay',
    description: 'Pays.',
    schema: z.object({ to: z.string(), amount: z.number() }),
    needsApproval: true,
    execute: (args) => {
      paid.push(args)
      return `paid ${args.to} ${args.amount}`
    },
  })

describe('resuming a checkpoint with one invoked child per wait (before the worker)', () => {
  it('fixture: the stored snapshots hold the per-wait children', () => {
    expect(Object.values(fixture.approval.checkpoint.snapshot as object)).toBeDefined()
    const children = (s: Stored) =>
      Object.values((s.checkpoint.snapshot as { children: Record<string, { src: string }> }).children).map((c) => c.src)
    expect(children(fixture.approval).sort()).toEqual(['deadline', 'requestApproval'])
    expect(children(fixture.model)).toEqual(['callModel'])
  })

  it('a run saved waiting for approval shows the same request again (same id, deadline) and goes on with the decision', async () => {
    const stored = fixture.approval
    const clock = laterClock(stored.checkpoint)
    const store = await storeWith(stored, clock)
    const storedRequest = stored.checkpoint.pending.approvals[0] as ApprovalRequest
    const shown: ApprovalRequest[] = []
    const paid: unknown[] = []
    const agent = createAgent({
      id: 'payer',
      provider: new ScriptedProvider({ script: [{ content: 'paid bob' }] }),
      tools: [pay(paid)],
      store,
      clock,
      hostId: 'new-host',
      approvalTimeoutMs: 60 * 60_000,
      reviewer: {
        review: async (request) => {
          shown.push(request)
          return decideApproval(request, true, 'alice', clock.now())
        },
      },
    })
    const handle = await agent.resume(stored.checkpoint.runId)
    const result = await handle.result
    expect(shown.map((r) => [r.requestId, r.deadline])).toEqual([[storedRequest.requestId, storedRequest.deadline]])
    expect(paid).toEqual([{ to: 'bob', amount: 5 }])
    expect(result).toMatchObject({ status: 'done', output: 'paid bob' })
    const children = (handle.actor.getPersistedSnapshot() as unknown as { children: Record<string, { src: string }> }).children
    expect(Object.values(children).map((c) => c.src)).toEqual(['worker'])
  })

  it('a run saved waiting for the model calls it again with the stored transcript', async () => {
    const stored = fixture.model
    const clock = laterClock(stored.checkpoint)
    const store = await storeWith(stored, clock)
    const provider = new ScriptedProvider({ script: [{ content: 'an old pond' }] })
    const agent = createAgent({ id: 'writer', provider, store, clock, hostId: 'new-host' })
    const result = await (await agent.resume(stored.checkpoint.runId)).result
    expect(result).toMatchObject({ status: 'done', output: 'an old pond' })
    expect(provider.requests.map((r) => r.messages)).toEqual([stored.messages])
  })
})
