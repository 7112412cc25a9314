/**
 * Checkpoints written before the run's worker (issue 13), when every wait was an invoked actor
 * of its own and the stored snapshot held that child with its input, still resume: the children
 * are replaced by the worker, which restarts the work of the state the run was saved in with the
 * same inputs (the same approval request id and absolute deadline, a decision or answer stored in
 * time recovered after it; the model called again; ask_human re-attached to its question).
 * The fixture was written by the agent machine of that time (one child per wait, as `main` had it
 * at 534b17e: the deadline child's input holds its approval request): each run was read from a
 * MemoryRunStore as soon as it reached its wait, as a crash there leaves it.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  type ApprovalRequest,
  askHumanTool,
  createAgent,
  decideApproval,
  type Message,
  type Question,
  tool,
} from '../../src/index.ts'
import { type Checkpoint, MemoryRunStore } from '../../src/store/index.ts'
import { ScriptedProvider } from '../../src/testing/index.ts'

interface Stored {
  checkpoint: Checkpoint
  messages: Message[]
}
const fixture = JSON.parse(
  readFileSync(new URL('./fixtures/checkpoints-per-wait-children.json', import.meta.url), 'utf8'),
) as Record<'approval' | 'model' | 'question', Stored>

const signal = new AbortController().signal
/** The fixture's time plus `afterMs` (its lease long expired), then running in real time. */
function laterClock(checkpoint: Checkpoint, afterMs = 10 * 60_000) {
  const base = checkpoint.savedAt + afterMs
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
    expect(children(fixture.question)).toEqual(['executeTool'])
    expect(fixture.question.checkpoint.pending.questions).toHaveLength(1)
    expect(fixture.question.checkpoint.ledger).toMatchObject([{ callId: 'call_ask', state: 'started' }])
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

  it('a run saved waiting for approval, resumed after its deadline: the decision stored in time is recovered and applied', async () => {
    const stored = fixture.approval
    const storedRequest = stored.checkpoint.pending.approvals[0] as ApprovalRequest
    const clock = laterClock(stored.checkpoint, storedRequest.deadline - stored.checkpoint.savedAt + 60_000)
    const store = await storeWith(stored, clock)
    const recovered: ApprovalRequest[] = []
    const paid: unknown[] = []
    const agent = createAgent({
      id: 'payer',
      provider: new ScriptedProvider({ script: [{ content: 'paid bob' }] }),
      tools: [pay(paid)],
      store,
      clock,
      hostId: 'new-host',
      reviewer: {
        review: () => Promise.reject(new Error('the deadline has passed: the request must not be shown again')),
        recover: async (request) => {
          recovered.push(request)
          return decideApproval(request, true, 'alice', request.deadline - 1_000)
        },
      },
    })
    const result = await (await agent.resume(stored.checkpoint.runId)).result
    expect(recovered.map((r) => r.requestId)).toEqual([storedRequest.requestId])
    expect(paid).toEqual([{ to: 'bob', amount: 5 }])
    expect(result).toMatchObject({ status: 'done', output: 'paid bob' })
  })

  it('a run saved while ask_human waited re-attaches to the same question (the tool is not run as a new call) and the model reads the answer', async () => {
    const stored = fixture.question
    const clock = laterClock(stored.checkpoint)
    const store = await storeWith(stored, clock)
    const storedQuestion = stored.checkpoint.pending.questions[0] as Question
    const asked: Question[] = []
    const askHuman = askHumanTool({
      clock,
      timeoutMs: 60 * 60_000,
      answerer: {
        answer: async (question) => {
          asked.push(question)
          return { questionId: question.questionId, answer: 'the duck', answeredBy: 'bob', answeredAt: clock.now() }
        },
      },
    })
    const provider = new ScriptedProvider({ script: [{ content: 'The duck it is.' }] })
    const agent = createAgent({ id: 'asker', provider, tools: [askHuman], store, clock, hostId: 'new-host' })
    const result = await (await agent.resume(stored.checkpoint.runId)).result
    expect(asked).toEqual([storedQuestion])
    expect(result).toMatchObject({ status: 'done', output: 'The duck it is.' })
    expect(provider.requests.at(-1)?.messages.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_ask' })
    expect(JSON.stringify(provider.requests.at(-1)?.messages.at(-1))).toContain('the duck')
  })

  it('a run saved while ask_human waited, resumed after its deadline: the answer stored in time is recovered', async () => {
    const stored = fixture.question
    const storedQuestion = stored.checkpoint.pending.questions[0] as Question
    const clock = laterClock(stored.checkpoint, storedQuestion.deadline - stored.checkpoint.savedAt + 60_000)
    const store = await storeWith(stored, clock)
    const askHuman = askHumanTool({
      clock,
      timeoutMs: 60 * 60_000,
      answerer: {
        answer: () => Promise.reject(new Error('the deadline has passed: the question must not be asked again')),
        recover: async (question) => ({
          questionId: question.questionId,
          answer: 'the seal',
          answeredBy: 'carol',
          answeredAt: question.deadline - 1_000,
        }),
      },
    })
    const provider = new ScriptedProvider({ script: [{ content: 'The seal, then.' }] })
    const agent = createAgent({ id: 'asker', provider, tools: [askHuman], store, clock, hostId: 'new-host' })
    const result = await (await agent.resume(stored.checkpoint.runId)).result
    expect(result).toMatchObject({ status: 'done', output: 'The seal, then.' })
    expect(JSON.stringify(provider.requests.at(-1)?.messages.at(-1))).toContain('the seal')
  })
})
