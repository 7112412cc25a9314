/**
 * A host that lost a run to another host's claim (its lease ran out while it was slow, and a host
 * taking over claimed the run) must not publish that run's result: its run ends with the store's
 * refusal, and a `run.result` saying so would win the result's de-duplication (one message per
 * run) over the real result of the host that now runs it, and the parent would read a failure.
 */
import { createAgentSystem } from '@signalbox/actors/system'
import { type Clock, createAgent, tool } from '@signalbox/core'
import { MemoryRunStore } from '@signalbox/core/store'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { deploy, eventually, TRANSPORTS } from '../actors/harness.ts'

describe.each(TRANSPORTS)('a run lost to another host ($name)', (transport) => {
  it('ends on the host that lost it without publishing a result for it', async () => {
    const deployment = await deploy(transport)
    const { subjects } = deployment
    // The store's own time, moved past the lease to let another host claim the run mid-way.
    let skewMs = 0
    const storeClock: Clock = {
      now: () => Date.now() + skewMs,
      setTimeout: (fn, ms) => setTimeout(fn, ms),
      clearTimeout: (id) => clearTimeout(id as ReturnType<typeof setTimeout>),
    }
    const store = new MemoryRunStore({ clock: storeClock })
    let release: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      release = resolve
    })
    let started = false
    const slow = tool({
      name: 'slow',
      description: 'Takes its time.',
      schema: z.object({}),
      execute: async () => {
        started = true
        await gate
        return 'done slowly'
      },
    })
    const worker = createAgent({
      id: 'worker',
      store,
      hostId: 'host-a',
      tools: [slow],
      provider: new ScriptedProvider({
        model: 'worker',
        script: [{ toolCalls: [{ id: 'c1', name: 'slow', arguments: {} }] }, { content: 'the answer' }],
      }),
    })
    const hostA = createAgentSystem({ bus: await deployment.bus('host-a'), subjects, hostId: 'host-a', runs: { store } })
    hostA.add(worker)
    await hostA.serve()
    const parentBus = await deployment.bus('parent')
    const parent = createAgentSystem({ bus: parentBus, subjects, hostId: 'parent-host', childLostAfterMs: 500 })
    deployment.defer(() => Promise.all([parent.close(), hostA.close()]))

    const waiting = parent.run('worker', 'Take your time.').catch((error: unknown) => error)
    await eventually(() => started, 10_000, 'the tool running on host A')
    const [runId, handle] = [...worker.runs][0] ?? []
    if (runId === undefined || handle === undefined) throw new Error('no run in flight on host A')

    // Host B takes the run over: the lease has run out by the store's clock, and B claims it.
    skewMs = 10 * 60_000
    const stored = await store.load(runId, { signal: AbortSignal.timeout(5_000) })
    if (stored === undefined) throw new Error('the run is not stored')
    await store.claim(runId, { owner: 'host-b', leaseMs: 60_000, revision: stored.revision, signal: AbortSignal.timeout(5_000) })

    // Host A's tool finishes; its next write is refused: the run is no longer its own.
    release()
    const outcome = await handle.result.then(
      (result) => result.error?.code,
      (error: unknown) => (error as { code?: string }).code,
    )
    expect(outcome).toBe('RUN_REVISION_CONFLICT')
    // Closing drains the host: whatever it publishes for its runs has been published after this.
    await hostA.close()
    expect(await parentBus.durableLast(subjects.runResult(runId), { signal: AbortSignal.timeout(5_000) })).toBeUndefined()
    await parent.close()
    await waiting
  })
})
