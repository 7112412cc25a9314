/**
 * Enforcing tool hosts under the permissions `rolePermissions` generates, on a private nats-server:
 * two hosts of one pool (one NATS user of the tool-host role) share their ledger of used approvals
 * (a JetStream KV bucket granted to that role), so a decision replayed at the other host, or at a
 * host restarted since, is refused, while the honest retry of the same call gets its answer and the
 * tool runs once. The server logs no permission violation.
 */
import { serveTools } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import {
  authorizationBlock,
  createSigner,
  createTrustPolicy,
  newUserSeed,
  type Role,
  type RolePermissions,
  rolePermissions,
} from '@signalbox/actors/trust'
import { decideApproval, tool } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import {
  callDigest,
  decodeMessage,
  ErrorMessage,
  encodeMessage,
  type ToolCallMessage,
  ToolResultMessage,
} from '@signalbox/core/protocol'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type ConfigServer, startConfigServer } from '../support/nats-config-server.ts'

const prefix = 'ledger.v1'
const subjects = createSubjects(prefix)
const users: Record<string, { roles: Role[]; permissions: RolePermissions }> = {
  claw: { roles: ['agent'], permissions: rolePermissions('agent', { prefix, agent: 'claw' }) },
  toolhost: { roles: ['tool-host'], permissions: rolePermissions('tool-host', { prefix, name: 'toolhost' }) },
}

const tina = createSigner(newUserSeed())
const policy = createTrustPolicy({ keys: { [tina.publicKey]: 'tina' }, reviewers: { drop_claw: [tina.publicKey] } })
const Reply = z.discriminatedUnion('type', [ToolResultMessage, ErrorMessage])

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

/** A host of the pool: its own connection (a process of its own, or the same one restarted). */
async function toolHost(options: { queue?: string; gate?: Promise<void> } = {}) {
  const bus = await busOf('toolhost')
  const dropped: number[] = []
  const host = serveTools({
    bus,
    subjects,
    tools: [
      tool({
        name: 'drop_claw',
        description: 'Drop the claw into a bin. Irreversible.',
        schema: z.object({ bin: z.number().int() }),
        needsApproval: true,
        execute: async ({ bin }) => {
          dropped.push(bin)
          await options.gate
          return `dropped into bin ${bin}`
        },
      }),
    ],
    approvals: { trust: policy },
    ...(options.queue ? { queue: options.queue } : {}),
  })
  cleanups.push(() => host.close())
  await host.ready
  /** Stops taking calls, once the server knows (a call routed to a closed subscription would go unanswered). */
  const stop = async () => {
    host.close()
    await bus.connection.flush()
  }
  return { host, dropped, stop }
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

describe('enforcing tool hosts under the generated permissions', () => {
  it('share their used approvals: a replay at another host or after a restart is refused, the retry is answered; no violation', async () => {
    const agent = await busOf('claw')
    const now = Date.now()
    const args = { bin: 2 }
    const request = {
      requestId: 'req-ledger-1',
      agentId: 'claw',
      runId: 'run-1',
      runPath: [],
      callId: 'call-1',
      toolName: 'drop_claw',
      arguments: args,
      digest: callDigest('drop_claw', args),
      deadline: now + 60_000,
      requestedAt: now,
    }
    const approval = tina.sign({ v: 1, type: 'approval.decision', ...decideApproval(request, true, 'tina', now) })
    const call = async (runId: string, approvalOf = approval, callId = 'call-1') => {
      const message: ToolCallMessage = {
        v: 1,
        type: 'tool.call',
        callId,
        toolName: 'drop_claw',
        agentId: 'claw',
        runId,
        arguments: args,
        deadline: Date.now() + 30_000,
        approval: approvalOf,
      }
      const response = await agent.request(subjects.tool('drop_claw'), encodeMessage(message), {
        timeoutMs: 10_000,
        headers: { 'Signalbox-Idempotency-Key': `${runId}:${callId}` },
      })
      const decoded = decodeMessage(response.data, Reply)
      if (!decoded.ok) throw decoded.error
      return decoded.value
    }

    const first = await toolHost()
    const ran = await call('run-1')
    expect(ran).toMatchObject({ type: 'tool.result', output: 'dropped into bin 2' })
    // The host restarts (a new connection, nothing in memory) and the pool has another member.
    await first.stop()
    const restarted = await toolHost()
    const other = await toolHost()
    for (const runId of ['run-2', 'run-3', 'run-4']) {
      const replay = await call(runId)
      expect(replay).toMatchObject({ type: 'error', error: { code: 'APPROVAL_INVALID', details: { reason: 'replayed' } } })
    }
    expect(await call('run-1')).toEqual(ran)
    expect([...first.dropped, ...restarted.dropped, ...other.dropped]).toEqual([2])

    // A retry that reaches a host while another still runs the call waits for its recorded answer
    // (a watch on the ledger's key, under the same grants).
    let release = () => {}
    const slow = await toolHost({ queue: 'slow-pool', gate: new Promise<void>((resolve) => (release = resolve)) })
    await restarted.stop()
    await other.stop()
    const second = { ...request, requestId: 'req-ledger-2', callId: 'call-2' }
    const approval2 = tina.sign({ v: 1, type: 'approval.decision', ...decideApproval(second, true, 'tina', Date.now()) })
    const running = call('run-1', approval2, 'call-2')
    await expect.poll(() => slow.dropped, { timeout: 10_000 }).toEqual([2])
    const waiter = await toolHost()
    const retried = call('run-1', approval2, 'call-2')
    await expect.poll(() => waiter.host.running, { timeout: 10_000 }).toBe(1)
    release()
    expect(await running).toMatchObject({ type: 'tool.result', callId: 'call-2' })
    expect(await retried).toEqual(await running)
    expect(waiter.dropped).toEqual([])
    expect(server.violations()).toEqual([])
  })
})
