/**
 * A stored run cut off right after a hand-off tool finished (its `finished` record, with the
 * hand-off, is stored; the machine had not moved on) ends, when resumed, with the same hand-off:
 * `stopReason: 'handoff'` and `result.handoff`, instead of reading the hand-off's text as a plain
 * result and calling the model again.
 */
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createAgent, handoff, tool } from '../../src/index.ts'
import type { Checkpoint } from '../../src/store/checkpoint.ts'
import { MemoryRunStore, type SaveOptions } from '../../src/store/index.ts'
import { ScriptedProvider } from '../../src/testing/index.ts'

const signal = new AbortController().signal

describe('resuming a run cut off after a hand-off', () => {
  it('ends with the recorded hand-off', async () => {
    const transfer = tool({
      name: 'transfer',
      description: 'Hands over to support.',
      schema: z.object({}),
      execute: () => handoff('support', { reason: 'billing question' }),
    })
    // A first run, to see what is stored before the tool runs (the `started` record).
    const seen = new MemoryRunStore()
    const saved: Checkpoint[] = []
    const save = seen.save.bind(seen)
    seen.save = (checkpoint: Checkpoint, options: SaveOptions) => {
      saved.push(structuredClone(checkpoint))
      return save(checkpoint, options)
    }
    // The run's first write may already hold the `started` record (it joins the deferred first save).
    const create = seen.create.bind(seen)
    seen.create = (checkpoint: Checkpoint, options: { signal: AbortSignal }) => {
      saved.push(structuredClone(checkpoint))
      return create(checkpoint, options)
    }
    const first = createAgent({
      id: 'desk',
      provider: new ScriptedProvider({ script: [{ toolCalls: [{ id: 'c1', name: 'transfer', arguments: {} }] }] }),
      tools: [transfer],
      store: seen,
      hostId: 'host-1',
    })
    const done = await first.run('I was double charged', { runId: 'r1' })
    expect(done.handoff?.to).toBe('support')
    const finished = saved.findLast((c) => c.ledger.some((e) => e.state === 'finished'))?.ledger[0]
    const before = saved.find((c) => c.ledger.some((e) => e.state === 'started')) as Checkpoint
    expect(finished).toMatchObject({ state: 'finished', result: { handoff: { to: 'support', reason: 'billing question' } } })

    // What a process killed right after the tool's `finished` record leaves: that record, with the
    // machine still in the tool call.
    const store = new MemoryRunStore()
    await store.create({ ...before, ledger: [finished as Checkpoint['ledger'][number]] }, { signal })
    const messages = await seen.readMessages('r1', { length: before.transcript.length, signal })
    await store.appendMessages('r1', { from: 0, epoch: before.lease?.epoch ?? 0, messages, signal })

    // Its model has nothing to say: it must not be called again.
    const second = createAgent({
      id: 'desk',
      provider: new ScriptedProvider({ script: [] }),
      tools: [transfer],
      store,
      hostId: 'host-1',
    })
    const result = await (await second.resume('r1')).result
    expect(result.stopReason).toBe('handoff')
    expect(result.handoff).toMatchObject({ to: 'support', reason: 'billing question' })
  })
})
