/**
 * The lease of a remote child and the heartbeats that renew it run on the systems' injected
 * `Clock`: here XState's `SimulatedClock`, so time moves only when the test moves it. The
 * lease is a minute long; nothing in these tests waits that long in real time, so only the
 * simulated clocks can renew or end it.
 */

import { type AgentSystem, ChildRunError, createAgentSystem } from '@signalbox/actors/system'
import type { Clock } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { SimulatedClock } from 'xstate'
import { deploy, TRANSPORTS } from '../actors/harness.ts'
import { agent, blockingTool, call, eventually, ofType, within } from './harness.ts'

const LEASE_MS = 60_000
const BEAT_MS = LEASE_MS / 3

/** Lets delivered messages and settled promises be handled before the test looks. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve))

describe.each(TRANSPORTS)('remote-run lease on the injected clock ($name)', (transport) => {
  async function setUp(clocks: { parent: Clock; host: Clock }) {
    const deployment = await deploy(transport)
    const { subjects } = deployment
    const systems: AgentSystem[] = []
    const parent = createAgentSystem({
      bus: await deployment.bus('parent'),
      subjects,
      hostId: 'parent-host',
      leaseMs: LEASE_MS,
      clock: clocks.parent,
    })
    const host = createAgentSystem({
      bus: await deployment.bus('child-host'),
      subjects,
      hostId: 'child-host',
      leaseMs: LEASE_MS,
      clock: clocks.host,
    })
    systems.push(parent, host)
    deployment.defer(() => Promise.all(systems.map((system) => system.close())))
    const blocking = blockingTool()
    const child = agent({ id: 'child', tools: [blocking.tool], script: [call('wait_forever', {})] })
    host.add(child.agent)
    await host.serve()
    const heartbeats: string[] = []
    const watcher = await deployment.bus('watcher')
    const watching = watcher.subscribe(`${subjects.prefix}.heartbeats.*`, (message) => {
      heartbeats.push(message.subject)
    })
    await watching.ready
    deployment.defer(() => watching.unsubscribe())
    return { subjects, parent, host, child, blocking, heartbeats }
  }

  it('a parent whose clock stands still sends no heartbeat: the host ends the child when its clock passes the lease', async () => {
    const parentClock = new SimulatedClock()
    const hostClock = new SimulatedClock()
    const { parent, host, child, blocking, heartbeats } = await setUp({ parent: parentClock, host: hostClock })

    const running = parent.run('child', 'Hold on.').catch((error: unknown) => error)
    const context = await within(blocking.started.promise, 5_000, 'the child’s tool starts')

    // One millisecond short of the lease: the child is still running.
    hostClock.increment(LEASE_MS - 1)
    await settle()
    expect(context.signal.aborted).toBe(false)
    expect(host.hostedRuns).toBe(1)
    expect(heartbeats).toEqual([])

    hostClock.increment(1)
    await within(blocking.aborted.promise, 5_000, 'the host cancels the child')
    const failure = await within(running, 5_000, 'the parent’s run ends')
    expect(failure).toBeInstanceOf(ChildRunError)
    expect((failure as ChildRunError).details).toMatchObject({ status: 'cancelled' })
    await eventually(() => ofType(child.events, 'run.end').length === 1, 5_000, 'the child run ends')
    expect(ofType(child.events, 'run.end')[0]?.error?.message).toContain('lease expired')
    await eventually(() => host.hostedRuns === 0, 5_000, 'the host forgets the run')
  })

  it('heartbeats on the parent’s clock renew the lease: the child outlives several leases, then the parent cancels it', async () => {
    const parentClock = new SimulatedClock()
    const hostClock = new SimulatedClock()
    const { subjects, parent, host, child, blocking, heartbeats } = await setUp({ parent: parentClock, host: hostClock })
    const controller = new AbortController()
    const running = parent.run('child', 'Hold on.', { signal: controller.signal }).catch((error: unknown) => error)
    const context = await within(blocking.started.promise, 5_000, 'the child’s tool starts')

    // The parent starts beating once the host's acceptance reached it (the child may start first).
    await eventually(
      async () => {
        parentClock.increment(BEAT_MS)
        await settle()
        return heartbeats.length > 0
      },
      5_000,
      'the first heartbeat',
    )
    // Four leases of host time, one heartbeat period at a time: a beat, then the host's clock moves.
    for (let round = 1; round <= 12; round++) {
      const sent = heartbeats.length
      parentClock.increment(BEAT_MS)
      await eventually(() => heartbeats.length > sent, 5_000, `heartbeat ${sent + 1}`)
      await settle()
      hostClock.increment(BEAT_MS)
      await settle()
      expect(context.signal.aborted, `aborted after ${round} rounds`).toBe(false)
    }
    expect(heartbeats.every((subject) => subject === subjects.runHeartbeat(context.runId))).toBe(true)
    expect(host.hostedRuns).toBe(1)
    expect(ofType(child.events, 'run.end')).toEqual([])

    controller.abort()
    await within(blocking.aborted.promise, 5_000, 'the parent’s cancellation reaches the child')
    await within(running, 5_000, 'the parent’s run ends')
    // The parent stopped beating with its run.
    const sent = heartbeats.length
    parentClock.increment(BEAT_MS * 3)
    await settle()
    expect(heartbeats.length).toBe(sent)
  })
})
