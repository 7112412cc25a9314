/**
 * No child outlives its parent: cancelling the parent (or timing its delegation out) cancels the
 * child wherever it runs, and a child whose parent vanished is cancelled by its host when the
 * parent's heartbeats stop (the lease). The cross-process cases (kill -9) are in test/system.
 */

import { RunFailedError } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { afterToolResult, answer, eventually, ofType, parentOfBlockedChild, TOPOLOGIES, topology, within } from './harness.ts'

describe.each(TOPOLOGIES)('cancellation (%s)', (name) => {
  it('cancelling the parent cancels the running child: its run ends cancelled, its tool’s signal aborts', async () => {
    const t = await topology(name)
    const { child, blocking } = await parentOfBlockedChild(t)

    const controller = new AbortController()
    const running = t.parent.run('parent', 'Go.', { signal: controller.signal }).catch((error: unknown) => error)
    const context = await within(blocking.started.promise, 5_000, 'the child’s tool starts')
    expect(context.runPath).toHaveLength(1)
    controller.abort('the person changed their mind')

    const failure = await within(running, 5_000, 'the parent ends')
    expect(failure).toBeInstanceOf(RunFailedError)
    expect((failure as RunFailedError).result.status).toBe('cancelled')
    await within(blocking.aborted.promise, 5_000, 'the child’s tool signal aborts')
    await eventually(() => ofType(child.events, 'run.end').length === 1, 5_000, 'the child run ends')
    expect(ofType(child.events, 'run.end')[0]).toMatchObject({ status: 'cancelled', runId: context.runId })
    expect(child.agent.runs.size).toBe(0)
  })

  it('a delegation that times out cancels its child; the parent’s model reads the timeout', async () => {
    const t = await topology(name)
    const { child, blocking } = await parentOfBlockedChild(t, {
      task: 'Slow work.',
      delegate: { timeoutMs: 300 },
      parentScript: [answer('It took too long.', { expect: afterToolResult('timed out') })],
    })
    const result = await t.parent.run('parent', 'Go.')
    expect(result.output).toBe('It took too long.')
    await within(blocking.aborted.promise, 5_000, 'the child’s tool signal aborts')
    await eventually(() => ofType(child.events, 'run.end')[0]?.status === 'cancelled', 5_000, 'the child is cancelled')
  })
})

describe('orphan guard (nats, in one process)', () => {
  it('when the parent’s connection dies, the host cancels the child once the lease runs out', async () => {
    const t = await topology('nats', { leaseMs: 600 })
    const { child, blocking } = await parentOfBlockedChild(t, { task: 'Hold on.' })
    const controller = new AbortController()
    const running = t.parent.run('parent', 'Go.', { signal: controller.signal }).catch(() => {})

    await within(blocking.started.promise, 5_000, 'the child’s tool starts')
    // Heartbeats flow: the child outlives a whole lease while its parent is alive.
    await new Promise((resolve) => setTimeout(resolve, 1_000))
    expect(child.agent.runs.size).toBe(1)

    // The parent's process "dies": its connection closes without a word to the child's host.
    const lost = Date.now()
    await t.bus?.close()
    await within(blocking.aborted.promise, 3_000, 'the host cancels the orphan')
    expect(Date.now() - lost).toBeGreaterThanOrEqual(300)
    await eventually(() => ofType(child.events, 'run.end').length === 1, 3_000, 'the child run ends')
    expect(ofType(child.events, 'run.end')[0]).toMatchObject({ status: 'cancelled' })
    expect(ofType(child.events, 'run.end')[0]?.error?.message).toContain('lease expired')
    controller.abort()
    await running
  })
})
