/**
 * A parent looking for its child by id (a delegate call run again after a crash), on each
 * transport, against a host that stores its runs: a child that ended without its result reaching
 * the stream (its host died between storing the end and publishing it) is published again from the
 * store; a parked one is reported, not waited for; one that is nowhere is lost, in bounded time.
 */
import { ChildRunError, createAgentSystem, derivedRunId } from '@signalbox/actors/system'
import { createAgent } from '@signalbox/core'
import { MemoryRunStore } from '@signalbox/core/store'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { deploy, TRANSPORTS } from '../actors/harness.ts'

describe.each(TRANSPORTS)('re-attaching to a child by id ($name)', (transport) => {
  async function setUp() {
    const deployment = await deploy(transport)
    const { subjects } = deployment
    const store = new MemoryRunStore()
    const worker = createAgent({
      id: 'worker',
      store,
      hostId: 'child-host',
      provider: new ScriptedProvider({ model: 'worker', script: () => ({ content: 'the stored answer' }) }),
    })
    const host = createAgentSystem({ bus: await deployment.bus('child-host'), subjects, hostId: 'child-host', runs: { store } })
    host.add(worker)
    await host.serve()
    const parent = createAgentSystem({
      bus: await deployment.bus('parent'),
      subjects,
      hostId: 'parent-host',
      childLostAfterMs: 500,
    })
    deployment.defer(() => Promise.all([parent.close(), host.close()]))
    const parentRunId = 'run_parent'
    const asChild = (callId: string) => ({
      runId: derivedRunId(parentRunId, callId),
      parentRunId,
      runPath: [parentRunId],
      agentPath: ['planner'],
      reattach: 'only' as const,
    })
    return { store, worker, parent, asChild }
  }

  it('a child whose end was stored but whose result never went out: published again from the store, read by the parent', async () => {
    const { worker, parent, asChild } = await setUp()
    const child = asChild('call_1')
    // The child ran to its end on its host, but nothing published its result (the host died first).
    await worker.run('Count the stock.', { runId: child.runId, runPath: child.runPath, parentRunId: child.parentRunId })
    const result = await parent.run('worker', 'Count the stock.', child)
    expect(result.output).toBe('the stored answer')
  })

  it('a parked child is reported with why, not waited for', async () => {
    const { store, worker, parent, asChild } = await setUp()
    const child = asChild('call_2')
    await worker.run('Count the stock.', { runId: child.runId, runPath: child.runPath, parentRunId: child.parentRunId })
    const stored = await store.load(child.runId, { signal: AbortSignal.timeout(5_000) })
    if (stored === undefined) throw new Error('the run is not stored')
    await store.save(
      { ...stored.checkpoint, status: 'parked', parked: { code: 'CHECKPOINT_INVALID', message: 'bad', by: 'x', at: 1 } },
      { revision: stored.revision, signal: AbortSignal.timeout(5_000) },
    )
    const failure = await parent.run('worker', 'Count the stock.', asChild('call_2')).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(ChildRunError)
    expect((failure as ChildRunError).code).toBe('RUN_NOT_RESUMABLE')
    expect((failure as ChildRunError).message).toContain('CHECKPOINT_INVALID')
  })

  it('a child that is nowhere is lost once childLostAfterMs has passed', async () => {
    const { parent, asChild } = await setUp()
    const began = Date.now()
    const failure = await parent.run('worker', 'Count the stock.', asChild('call_never')).catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(ChildRunError)
    expect((failure as ChildRunError).code).toBe('CHILD_LOST')
    expect(Date.now() - began).toBeGreaterThanOrEqual(500)
  })
})
