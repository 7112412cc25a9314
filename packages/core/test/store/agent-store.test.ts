/**
 * `createAgent({ store })` in one process: the transcript is written once (by reference, not per
 * step), the end of a run is stored without a lease, a decision delivered again after it was
 * applied is ignored and audited as a duplicate, a decision that reaches a run another host has
 * claimed is not applied, and `resume` refuses what it cannot continue.
 */
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  type ApprovalDecision,
  type ApprovalRequest,
  type Clock,
  createAgent,
  decideApproval,
  MemoryAuditLog,
  tool,
} from '../../src/index.ts'
import { type AppendMessagesOptions, MemoryRunStore, type RunStore } from '../../src/store/index.ts'
import { ScriptedProvider } from '../../src/testing/index.ts'

const signal = new AbortController().signal

/** Counts what goes into the message log. */
function countingStore(): { store: RunStore; appended: number[] } {
  const store = new MemoryRunStore()
  const appended: number[] = []
  const append = store.appendMessages.bind(store)
  store.appendMessages = (runId: string, options: AppendMessagesOptions) => {
    appended.push(options.messages.length)
    return append(runId, options)
  }
  return { store, appended }
}

describe('agent with a run store', () => {
  it('writes each message once and stores the finished run without a lease', async () => {
    const { store, appended } = countingStore()
    const note = tool({
      name: 'note',
      description: 'Notes.',
      schema: z.object({ n: z.number() }),
      execute: ({ n }) => `noted ${n}`,
    })
    const steps = Array.from({ length: 20 }, (_, i) => ({ toolCalls: [{ id: `c${i}`, name: 'note', arguments: { n: i } }] }))
    const agent = createAgent({
      provider: new ScriptedProvider({ script: [...steps, { content: 'done' }] }),
      tools: [note],
      store,
      maxTurns: 30,
    })
    const result = await agent.run('go', { runId: 'r1' })

    const stored = await store.load('r1', { signal })
    expect(stored?.checkpoint).toMatchObject({ status: 'done', transcript: { length: result.messages.length } })
    // The ledger holds the call in hand, not the run's history (that is the transcript).
    expect(stored?.checkpoint.ledger.map((e) => [e.callId, e.state])).toEqual([['c19', 'finished']])
    expect(stored?.checkpoint.lease).toBeUndefined()
    expect(await store.readMessages('r1', { length: result.messages.length, signal })).toEqual(result.messages)
    // 1 user + 20 × (reply + tool result) + the answer: each written once.
    expect(appended.reduce((a, b) => a + b, 0)).toBe(result.messages.length)
  })

  it('ignores a decision delivered again after it was applied, and audits it as a duplicate', async () => {
    const audit = new MemoryAuditLog()
    let release: () => void = () => {}
    const running = new Promise<void>((resolve) => {
      release = resolve
    })
    let started: () => void = () => {}
    const toolStarted = new Promise<void>((resolve) => {
      started = resolve
    })
    const runs: string[] = []
    const drop = tool({
      name: 'drop',
      description: 'Drops.',
      schema: z.object({}),
      needsApproval: true,
      execute: async () => {
        runs.push('drop')
        started()
        await running
        return 'dropped'
      },
    })
    let applied: ApprovalDecision | undefined
    const agent = createAgent({
      provider: new ScriptedProvider({ script: [{ toolCalls: [{ id: 'c1', name: 'drop', arguments: {} }] }, { content: 'ok' }] }),
      tools: [drop],
      store: new MemoryRunStore(),
      audit,
      reviewer: {
        review: async (request) => {
          applied = decideApproval(request, true, 'alice', Date.now())
          return applied
        },
      },
    })
    const handle = agent.start('go', { runId: 'r2' })
    await toolStarted
    handle.actor.send({ type: 'approval.decision', decision: applied })
    release()
    await handle.result

    expect(runs).toEqual(['drop'])
    expect(audit.entries.map((e) => [e.kind, e.actor])).toEqual([
      ['approval.granted', 'alice'],
      ['approval.duplicate', 'alice'],
    ])
    expect(audit.entries[1]?.reason).toContain('already applied')
  })

  it('a decision that reaches a run whose lease ran out and was claimed by another host is never applied here', async () => {
    // Paused past its lease (a stalled process): the agent's and the store's time jump ahead.
    let skewMs = 0
    const clock: Clock = {
      now: () => Date.now() + skewMs,
      setTimeout: (fn, ms) => setTimeout(fn, ms),
      clearTimeout: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
    }
    const store = new MemoryRunStore({ clock })
    const audit = new MemoryAuditLog()
    const runs: string[] = []
    const drop = tool({
      name: 'drop',
      description: 'Drops.',
      schema: z.object({}),
      needsApproval: true,
      execute: () => {
        runs.push('drop')
        return 'dropped'
      },
    })
    let decide: (decision: ApprovalDecision) => void = () => {}
    let asked: (request: ApprovalRequest) => void = () => {}
    const requested = new Promise<ApprovalRequest>((resolve) => {
      asked = resolve
    })
    const agent = createAgent({
      provider: new ScriptedProvider({ script: [{ toolCalls: [{ id: 'c1', name: 'drop', arguments: {} }] }, { content: 'ok' }] }),
      tools: [drop],
      store,
      clock,
      hostId: 'host-a',
      leaseMs: 60_000,
      audit,
      reviewer: {
        review: (request) =>
          new Promise<ApprovalDecision>((resolve) => {
            decide = resolve
            asked(request)
          }),
      },
    })
    const handle = agent.start('go', { runId: 'r3' })
    const request = await requested
    skewMs = 10 * 60_000
    const stored = await store.load('r3', { signal })
    await store.claim('r3', { owner: 'host-b', leaseMs: 60_000, revision: stored?.revision as number, signal })

    decide(decideApproval(request, true, 'alice', clock.now()))
    await expect(handle.result).rejects.toMatchObject({ code: 'RUN_REVISION_CONFLICT' })
    expect(runs).toEqual([])
    // The decision is host B's to apply: nothing of it is audited by the host that lost the run.
    expect(audit.entries.map((e) => e.kind)).toEqual([])
    expect((await store.load('r3', { signal }))?.checkpoint.lease?.owner).toBe('host-b')
  })

  it('resume needs a store, a stored unfinished run of this agent', async () => {
    const plain = createAgent({ provider: new ScriptedProvider({ script: [] }) })
    await expect(plain.resume('r')).rejects.toMatchObject({ code: 'CONFIG_INVALID' })

    const store = new MemoryRunStore()
    const agent = createAgent({ provider: new ScriptedProvider({ script: [{ content: 'hi' }] }), store })
    await agent.run('go', { runId: 'r3' })
    await expect(agent.resume('r3')).rejects.toMatchObject({
      code: 'RUN_NOT_RESUMABLE',
      message: expect.stringContaining('Run "r3"'),
    })
    await expect(agent.resume('nope')).rejects.toMatchObject({ code: 'RUN_NOT_FOUND' })
    const other = createAgent({ id: 'other', provider: new ScriptedProvider({ script: [] }), store })
    await expect(other.resume('r3')).rejects.toMatchObject({ code: 'RUN_NOT_RESUMABLE' })
  })
})
