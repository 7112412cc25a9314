/**
 * Every feature at once, each part as its own user under the permissions `rolePermissions`
 * generates, on a private nats-server: a parent agent delegating to a child agent on another host
 * (run request, lease heartbeats, durable result), hosts with the directory and a KV run store, a
 * remote tool host (discovery and calls with idempotency keys), a reviewer and answerer, a
 * steering operator, an observer (events, audit, inspection, the stored runs) and a console. The
 * server logs no permission violation: nothing any feature does was forgotten in the tables.
 */
import {
  busAuditLog,
  discoverTools,
  readAudit,
  remoteAnswerer,
  remoteReviewer,
  sendControl,
  serveAnswerer,
  serveReviewer,
  serveTools,
  watchEvents,
} from '@signalbox/actors'
import { createBusInspector } from '@signalbox/actors/inspect'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import { createAgentSystem, delegateTool, derivedRunId, KvDirectory } from '@signalbox/actors/system'
import { authorizationBlock, type Role, type RolePermissions, rolePermissions } from '@signalbox/actors/trust'
import { createConsoleHub } from '@signalbox/console'
import { type AgentEvent, askHumanTool, createAgent, functionAnswerer, policyReviewer, tool } from '@signalbox/core'
import { createSubjects, directoryBucket } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type ConfigServer, startConfigServer } from '../support/nats-config-server.ts'

const prefix = 'every.v1'
const subjects = createSubjects(prefix)
const runBucket = 'every_runs'

const users: Record<string, { roles: Role[]; permissions: RolePermissions }> = {}
const add = (user: string, roles: Role[], scope: Parameters<typeof rolePermissions>[1] = {}) => {
  users[user] = { roles, permissions: rolePermissions(roles, { prefix, runBucket, name: user, ...scope }) }
}
add('travel', ['agent'], { agent: 'travel', children: ['flights', 'hotels'] })
// One host, one user, two agents on one connection (each with its own consumers).
add('bookings', ['agent'], { agent: ['flights', 'hotels'] })
add('toolhost', ['tool-host'])
add('tina', ['reviewer', 'answerer'])
add('operator', ['steering'])
add('observer', ['observer'])
add('sam', ['console'])

let server: ConfigServer
const cleanups: (() => unknown)[] = []

async function busOf(user: string): Promise<NatsBus> {
  const { roles, permissions } = users[user] as { roles: Role[]; permissions: RolePermissions }
  const bus = await connectNatsBus({
    servers: server.url,
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

beforeAll(async () => {
  server = await startConfigServer(() =>
    authorizationBlock(
      Object.entries(users).map(([user, { permissions }]) => ({ login: { user, password: `pw-${user}` }, permissions })),
    ),
  )
})

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await server?.dispose()
})

describe('every role under the generated permissions', () => {
  it('delegation across hosts, stored runs, remote tools, review, answers, control, observation and the console: no violation', async () => {
    // The agents' users create the stream; the others wait for it.
    const travelBus = await busOf('travel')
    const flightsBus = await busOf('bookings')
    const [toolBus, tinaBus, operatorBus, observerBus, samBus] = await Promise.all(
      ['toolhost', 'tina', 'operator', 'observer', 'sam'].map(busOf),
    )

    // The observer: every event, inspection, and (below) the audit and the stored runs.
    const events: AgentEvent[] = []
    const watch = watchEvents({ bus: observerBus as NatsBus, subjects, onEvent: (event) => events.push(event) })
    cleanups.push(() => watch.unsubscribe())
    const inspected: string[] = []
    const inspection = (observerBus as NatsBus).subscribe(subjects.pattern('inspect'), (message) => {
      inspected.push(message.subject)
    })
    cleanups.push(() => inspection.unsubscribe())
    await Promise.all([watch.ready, inspection.ready])

    // The console.
    const hub = createConsoleHub({ bus: samBus as NatsBus, subjects, reviewer: 'sam' })
    cleanups.push(() => hub.close())
    await hub.ready

    // A tool host: the flights agent discovers its tool and calls it.
    const lookups: string[] = []
    const host = serveTools({
      bus: toolBus as NatsBus,
      subjects,
      tools: [
        tool({
          name: 'lookup_flight',
          description: 'Finds a flight.',
          schema: z.object({ to: z.string() }),
          execute: ({ to }) => {
            lookups.push(to)
            return `AF123 to ${to}`
          },
        }),
      ],
    })
    cleanups.push(() => host.close())
    await host.ready

    // Tina reviews and answers.
    const tina = serveReviewer({
      bus: tinaBus as NatsBus,
      subjects,
      reviewer: policyReviewer(() => ({ approved: true, reason: 'within budget' }), { name: 'tina' }),
    })
    const tinaAnswers = serveAnswerer({
      bus: tinaBus as NatsBus,
      subjects,
      answerer: functionAnswerer(() => 'Window seat.', { name: 'tina' }),
    })
    cleanups.push(
      () => tina.close(),
      () => tinaAnswers.close(),
    )
    await Promise.all([tina.ready, tinaAnswers.ready])

    // The flights host: a stored agent (KV run store), in the directory, inspected, audited on the bus.
    const flightsStore = new KvRunStore({ connection: flightsBus.connection, bucket: runBucket })
    const flightsSystem = createAgentSystem({
      bus: flightsBus,
      subjects,
      hostId: 'flights-host',
      directory: new KvDirectory(flightsBus.connection, { bucket: directoryBucket(prefix) }),
      runs: { store: flightsStore },
    })
    cleanups.push(() => flightsSystem.close())
    const booked: string[] = []
    const inspector = createBusInspector({ bus: flightsBus, subjects, runtimeId: 'flights-host' })
    const flightsReviewer = remoteReviewer({ bus: flightsBus, subjects })
    const flightsAnswerer = remoteAnswerer({ bus: flightsBus, subjects })
    const hotelsReviewer = remoteReviewer({ bus: flightsBus, subjects })
    cleanups.push(
      () => flightsReviewer.close(),
      () => flightsAnswerer.close(),
      () => hotelsReviewer.close(),
    )
    const hotelsBooked: string[] = []
    flightsSystem.add(
      createAgent({
        id: 'hotels',
        reviewer: hotelsReviewer,
        audit: busAuditLog({ bus: flightsBus, subjects }),
        provider: new ScriptedProvider({
          script: [
            { toolCalls: [{ id: 'c_hotel', name: 'book_hotel', arguments: { hotel: 'Miraflores' } }] },
            { content: 'Booked Miraflores.' },
          ],
        }),
        tools: [
          tool({
            name: 'book_hotel',
            description: 'Books a hotel. Irreversible.',
            schema: z.object({ hotel: z.string() }),
            needsApproval: true,
            execute: ({ hotel }) => {
              hotelsBooked.push(hotel)
              return `booked ${hotel}`
            },
          }),
        ],
        approvalTimeoutMs: 30_000,
      }),
    )
    flightsSystem.add(
      createAgent({
        id: 'flights',
        store: flightsStore,
        inspect: inspector.inspect,
        audit: busAuditLog({ bus: flightsBus, subjects }),
        reviewer: flightsReviewer,
        provider: new ScriptedProvider({
          script: [
            { toolCalls: [{ id: 'c_lookup', name: 'lookup_flight', arguments: { to: 'Lima' } }] },
            { toolCalls: [{ id: 'c_seat', name: 'ask_human', arguments: { question: 'Window or aisle?' } }] },
            { toolCalls: [{ id: 'c_book', name: 'book_flight', arguments: { flight: 'AF123' } }] },
            { content: 'Booked AF123 to Lima, window seat.' },
          ],
        }),
        tools: [
          ...(await discoverTools({ bus: flightsBus, subjects, names: ['lookup_flight'] })),
          askHumanTool({ answerer: flightsAnswerer, timeoutMs: 30_000 }),
          tool({
            name: 'book_flight',
            description: 'Books a flight. Irreversible.',
            schema: z.object({ flight: z.string() }),
            needsApproval: true,
            execute: ({ flight }) => {
              booked.push(flight)
              return `booked ${flight}`
            },
          }),
        ],
        approvalTimeoutMs: 30_000,
      }),
    )
    await flightsSystem.serve()

    // The travel host: delegates to flights, elsewhere.
    const travelSystem = createAgentSystem({
      bus: travelBus,
      subjects,
      hostId: 'travel-host',
      directory: new KvDirectory(travelBus.connection, { bucket: directoryBucket(prefix) }),
    })
    cleanups.push(() => travelSystem.close())
    travelSystem.add(
      createAgent({
        id: 'travel',
        provider: new ScriptedProvider({
          script: [
            {
              toolCalls: [
                { id: 'c_ask', name: 'ask_flights', arguments: { task: 'Book me to Lima.' } },
                { id: 'c_hotel', name: 'ask_hotels', arguments: { task: 'A hotel in Lima.' } },
              ],
            },
            { content: 'Your flight AF123 to Lima is booked.' },
          ],
        }),
        tools: [delegateTool(travelSystem, 'flights'), delegateTool(travelSystem, 'hotels')],
      }),
    )
    await travelSystem.serve()

    // The operator asks flights for its status (the signed cancels are in trust/signed-cancel.test.ts).
    const status = await sendControl({
      bus: operatorBus as NatsBus,
      subjects,
      agentId: 'flights',
      request: { type: 'control.status' },
    })
    expect(status.type).toBe('control.reply')

    const result = await travelSystem.run('travel', 'I need to get to Lima.')
    expect(result.output).toBe('Your flight AF123 to Lima is booked.')
    expect(lookups).toEqual(['Lima'])
    expect(booked).toEqual(['AF123'])
    expect(hotelsBooked).toEqual(['Miraflores'])

    // A parent re-attaching to its children (after a crash, a takeover), under the same grants: a
    // finished child's result is read back from the stream; a child that is nowhere is looked for
    // (heartbeat answered by no host, the hosts' stores checked) and reported lost.
    const reattach = { parentRunId: result.runId, runPath: [result.runId], agentPath: ['travel'], reattach: 'only' as const }
    const again = await travelSystem.run('flights', 'Book me to Lima.', {
      ...reattach,
      runId: derivedRunId(result.runId, '1:c_ask'),
    })
    expect(again.output).toBe('Booked AF123 to Lima, window seat.')
    const impatient = createAgentSystem({ bus: travelBus, subjects, hostId: 'travel-host', childLostAfterMs: 300 })
    const lost = await impatient
      .run('flights', 'Book me to Lima.', { ...reattach, runId: derivedRunId(result.runId, 'c_never') })
      .catch((error: unknown) => error)
    expect(lost).toMatchObject({ code: 'CHILD_LOST' })

    // The observer read everything.
    const trail = await readAudit({ bus: observerBus as NatsBus, subjects, idleMs: 500 })
    expect(trail.map((e) => [e.agentId, e.kind, e.actor])).toEqual(
      expect.arrayContaining([
        ['flights', 'question.answered', 'tina'],
        ['flights', 'approval.granted', 'tina'],
        ['hotels', 'approval.granted', 'tina'],
      ]),
    )
    const listing = await new KvRunStore({ connection: (observerBus as NatsBus).connection, bucket: runBucket }).list({
      signal: AbortSignal.timeout(5_000),
    })
    expect(listing.runs.map((r) => r.checkpoint.agentId)).toContain('flights')
    expect(events.some((e) => e.agentId === 'flights' && e.type === 'run.end')).toBe(true)
    expect(events.some((e) => e.agentId === 'travel' && e.type === 'run.end')).toBe(true)
    expect(inspected.length).toBeGreaterThan(0)
    // The console's consumers and subscriptions are live (what it saw depends on how fast tina was).
    expect(hub.snapshot().inbox).toEqual([])

    expect(server.violations()).toEqual([])
  }, 90_000)
})
