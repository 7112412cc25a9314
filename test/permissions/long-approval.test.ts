/**
 * The production configuration, where people take their time: a nats-server whose authorization
 * block is `rolePermissions` for each user (the agent, a reviewer service, a console), an agent
 * with the heartbeats of an agent without a run store, and a person who decides well after the
 * orphan window (three heartbeats and a half) has passed. The decision is applied, nobody
 * withdraws the request as orphaned, and the server logs no permission violation.
 */
import { remoteReviewer, serveReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { authorizationBlock, type Role, type RolePermissions, rolePermissions } from '@signalbox/actors/trust'
import { createConsoleHub } from '@signalbox/console'
import { createAgent, MemoryAuditLog, policyReviewer, tool } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type ConfigServer, startConfigServer } from '../support/nats-config-server.ts'

const prefix = 'slow.v1'
const subjects = createSubjects(prefix)
const HEARTBEAT_MS = 200
/** What a reviewer service waits for before withdrawing a request: three heartbeats, and a second look half one later. */
const ORPHAN_WINDOW_MS = 3 * HEARTBEAT_MS + HEARTBEAT_MS / 2

const users: Record<string, { roles: Role[]; permissions: RolePermissions }> = {
  claw: { roles: ['agent'], permissions: rolePermissions('agent', { prefix, agent: 'claw' }) },
  tina: { roles: ['reviewer'], permissions: rolePermissions('reviewer', { prefix, name: 'tina' }) },
  sam: { roles: ['console'], permissions: rolePermissions('console', { prefix, name: 'sam' }) },
}

let server: ConfigServer | undefined
const cleanups: (() => unknown)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await server?.dispose()
  server = undefined
})

async function busOf(user: string): Promise<NatsBus> {
  const { roles, permissions } = users[user] as { roles: Role[]; permissions: RolePermissions }
  const bus = await connectNatsBus({
    servers: (server as ConfigServer).url,
    prefix,
    user,
    pass: `pw-${user}`,
    inboxPrefix: permissions.inboxPrefix,
    consumerPrefix: permissions.name,
    durable: roles.includes('agent') ? {} : { access: 'check' },
    name: user,
  })
  cleanups.push(() => bus.close())
  return bus
}

describe('an approval that takes longer than the orphan window, under the generated permissions', () => {
  it('is applied: the heartbeats get through, nobody withdraws the request, and the server logs no violation', async () => {
    server = await startConfigServer(() =>
      [
        authorizationBlock(
          Object.entries(users).map(([user, { permissions }]) => ({ login: { user, password: `pw-${user}` }, permissions })),
        ).replace(
          '  users = [',
          // A probe (not a deployment role) that counts the heartbeats: the test's clock.
          '  users = [\n    { user: probe, password: pw-probe }',
        ),
      ].join('\n'),
    )
    const probe = await connectNatsBus({ servers: server.url, prefix, user: 'probe', pass: 'pw-probe', name: 'probe' })
    cleanups.push(() => probe.close())
    // Heartbeats carry the agent's clock (`at`): the test waits for one sent a given time after another.
    const beatWaiters: { at: number; resolve: () => void }[] = []
    const heard = probe.subscribe(subjects.alive('claw'), (message) => {
      const { at } = JSON.parse(message.text()) as { at: number }
      for (const waiter of [...beatWaiters]) {
        if (at > waiter.at) {
          beatWaiters.splice(beatWaiters.indexOf(waiter), 1)
          waiter.resolve()
        }
      }
    })
    await heard.ready
    const heartbeatSentAfter = (at: number) =>
      new Promise<void>((resolve) => {
        beatWaiters.push({ at, resolve })
      })

    // The agent: no run store, so its pending request promises heartbeats.
    const agentBus = await busOf('claw')
    const audit = new MemoryAuditLog()
    const reviewer = remoteReviewer({ bus: agentBus, subjects, heartbeatMs: HEARTBEAT_MS, audit: false })
    cleanups.push(() => reviewer.close())
    const dropped: number[] = []
    const agent = createAgent({
      id: 'claw',
      audit,
      provider: new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { bin: 3 } }] }, { content: 'dropped' }],
      }),
      tools: [
        tool({
          name: 'drop_claw',
          description: 'Drop the claw. Irreversible.',
          schema: z.object({ bin: z.number() }),
          needsApproval: true,
          execute: ({ bin }) => {
            dropped.push(bin)
            return `dropped into bin ${bin}`
          },
        }),
      ],
      reviewer,
      approvalTimeoutMs: 60_000,
    })

    // A console watching (it withdraws orphans too), and tina's reviewer service, who takes her time.
    const consoleBus = await busOf('sam')
    const hub = createConsoleHub({ bus: consoleBus, subjects, reviewer: 'sam' })
    cleanups.push(() => hub.close())
    const consoleSettled = new Promise<void>((resolve) => {
      hub.subscribe((message) => {
        if (message.type === 'inbox.settled') resolve()
      })
    })
    await hub.ready
    const orphaned: string[] = []
    const shownAt: number[] = []
    let decidedAfterMs = 0
    const tinaBus = await busOf('tina')
    const tina = serveReviewer({
      bus: tinaBus,
      subjects,
      reviewer: policyReviewer(
        async () => {
          shownAt.push(Date.now())
          // Past the window for sure: until the agent sent a heartbeat twice the window after the person was shown it.
          await heartbeatSentAfter((shownAt[0] as number) + 2 * ORPHAN_WINDOW_MS)
          decidedAfterMs = Date.now() - (shownAt[0] as number)
          return { approved: true, reason: 'bin 3 is the penguin' }
        },
        { name: 'tina' },
      ),
      onOrphaned: (request) => orphaned.push(request.requestId),
    })
    cleanups.push(() => tina.close())
    await tina.ready

    const result = await agent.run('Drop into bin 3.')
    expect(result.output).toBe('dropped')
    expect(decidedAfterMs).toBeGreaterThan(2 * ORPHAN_WINDOW_MS)
    expect(dropped).toEqual([3])
    expect(orphaned).toEqual([])
    expect(audit.entries.map((e) => [e.kind, e.actor])).toEqual([['approval.granted', 'tina']])
    // The console saw it decided by tina, never withdrawn by the system.
    await consoleSettled
    const settled = hub.snapshot().settled
    expect(settled.map((s) => [s.outcome, s.by])).toEqual([['approved', 'tina']])
    expect(server.violations()).toEqual([])
  }, 60_000)
})
