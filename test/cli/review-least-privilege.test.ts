/**
 * `signalbox review` as a least-privilege user: on a nats-server whose authorization block is the
 * generator's, the reviewer runs as its own user with `--inbox-prefix`, `--consumer-prefix` and
 * `--stream-access check`, and decides an agent's request (the tool runs once). Without those
 * flags the same user cannot work (it may not create the stream or read the shared inbox).
 *
 * Started before any agent host (the order docs/production.md's people and observers often come
 * in), such a user waits for the stream the first host creates; a one-shot command says at once
 * that it is missing.
 */

import { remoteReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { authorizationBlock, rolePermissions } from '@signalbox/actors/trust'
import { CONNECT_TIMEOUT_MS } from '@signalbox/cli/internal'
import { createAgent, MemoryAuditLog, tool } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type ConfigServer, startConfigServer } from '../support/nats-config-server.ts'
import { cleanupAll, runCli, startProcess } from './support.ts'

const prefix = 'lpcli.v1'
const agentPermissions = rolePermissions('agent', { prefix, agent: 'claw' })
const reviewerPermissions = rolePermissions('reviewer', { prefix, name: 'tina' })
const observerPermissions = rolePermissions('observer', { prefix, name: 'olga' })
/** The flags of a least-privilege user of the generated config. */
const as = (user: string, password: string, permissions: { inboxPrefix: string; name: string }) => [
  ...['--nats', server?.url as string, '--prefix', prefix, '--user', user, '--password', password],
  ...['--inbox-prefix', permissions.inboxPrefix, '--consumer-prefix', permissions.name, '--stream-access', 'check'],
]

let server: ConfigServer | undefined
let bus: NatsBus | undefined
afterEach(async () => {
  await cleanupAll()
  await bus?.close()
  await server?.dispose()
})

/** The agent's bus, as the agent user of the generated config. */
const connectAgentBus = () =>
  connectNatsBus({
    servers: server?.url as string,
    prefix,
    user: 'claw',
    pass: 'pw-claw',
    inboxPrefix: agentPermissions.inboxPrefix,
    consumerPrefix: agentPermissions.name,
  })

/** The gated tool the reviewer decides on; each drop is recorded in `dropped`. */
const dropClaw = (dropped: number[]) =>
  tool({
    name: 'drop_claw',
    description: 'Drop the claw. Irreversible.',
    schema: z.object({ bin: z.number() }),
    needsApproval: true,
    execute: ({ bin }) => {
      dropped.push(bin)
      return `dropped into bin ${bin}`
    },
  })

describe('signalbox review under least privilege', () => {
  it('runs as the reviewer user of a generated config and decides a request', async () => {
    const block = authorizationBlock([
      { login: { user: 'claw', password: 'pw-claw' }, permissions: agentPermissions },
      { login: { user: 'tina', password: 'pw-tina' }, permissions: reviewerPermissions },
    ])
    server = await startConfigServer(() => block)
    bus = await connectAgentBus()
    const subjects = createSubjects(prefix)

    const reviewer = startProcess(
      [
        'review',
        '--auto',
        'approve',
        '--name',
        'tina',
        '--nats',
        server.url,
        '--prefix',
        prefix,
        '--user',
        'tina',
        '--password',
        'pw-tina',
        '--inbox-prefix',
        reviewerPermissions.inboxPrefix,
        '--consumer-prefix',
        reviewerPermissions.name,
        '--stream-access',
        'check',
      ],
      { name: 'review' },
    )
    await reviewer.waitFor('reviewing approval requests')

    const dropped: number[] = []
    const drop = dropClaw(dropped)
    const audit = new MemoryAuditLog()
    const agent = createAgent({
      id: 'claw',
      audit,
      provider: new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { bin: 3 } }] }, { content: 'dropped' }],
      }),
      tools: [drop],
      reviewer: remoteReviewer({ bus, subjects }),
      approvalTimeoutMs: 30_000,
    })
    const result = await agent.run('Drop into bin 3.')
    expect(result.output).toBe('dropped')
    expect(dropped).toEqual([3])
    expect(audit.entries.map((e) => [e.kind, e.actor])).toEqual([['approval.granted', 'tina']])
    expect(reviewer.stderr).not.toMatch(/permission|violation/i)
    expect(await reviewer.stop('SIGTERM')).toBe(0)
    // Nothing either side did was refused: the agent's heartbeats, the reviewer's watch of them.
    expect(server.violations()).toEqual([])
  }, 60_000)

  it('without the flags, the same user is refused with a clear error', async () => {
    server = await startConfigServer(() =>
      authorizationBlock([{ login: { user: 'tina', password: 'pw-tina' }, permissions: reviewerPermissions }]),
    )
    const run = await runCli([
      'review',
      '--auto',
      'approve',
      '--name',
      'tina',
      '--nats',
      server.url,
      '--prefix',
      prefix,
      '--user',
      'tina',
      '--password',
      'pw-tina',
    ])
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(/BUS_DURABLE_SETUP_FAILED.*Permissions Violation/)
    expect(run.output).not.toContain('reviewing approval requests')
  }, 60_000)

  it('started before any agent host, the reviewer and the watcher wait for the stream; a one-shot command says it is missing', async () => {
    server = await startConfigServer(() =>
      authorizationBlock([
        { login: { user: 'claw', password: 'pw-claw' }, permissions: agentPermissions },
        { login: { user: 'tina', password: 'pw-tina' }, permissions: reviewerPermissions },
        { login: { user: 'olga', password: 'pw-olga' }, permissions: observerPermissions },
      ]),
    )
    const tina = as('tina', 'pw-tina', reviewerPermissions)
    const olga = as('olga', 'pw-olga', observerPermissions)
    // One-shot: nothing to wait for, so it fails at once, naming the stream and who creates it.
    const status = await runCli(['audit', ...olga])
    expect(status.code).toBe(1)
    expect(status.stderr).toContain('error [BUS_STREAM_NOT_FOUND]: no durable stream "')
    expect(status.stderr).toContain('no agent host has created it yet')

    const reviewer = startProcess(['review', '--auto', 'approve', '--name', 'tina', ...tina], { name: 'review' })
    const watcher = startProcess(['watch', '--json', ...olga], { name: 'watch' })
    for (const service of [reviewer, watcher]) await service.waitFor('waiting for the durable stream')
    // Past the deadline for reaching the server, they are still waiting (they used to give up here).
    await new Promise((resolve) => setTimeout(resolve, CONNECT_TIMEOUT_MS + 1_000))
    expect([reviewer.child.exitCode, watcher.child.exitCode]).toEqual([null, null])

    // The agent host comes and creates the stream: both start work, and the call is decided.
    bus = await connectAgentBus()
    await reviewer.waitFor('reviewing approval requests')
    await watcher.waitFor('watching every agent')
    const dropped: number[] = []
    const agent = createAgent({
      id: 'claw',
      provider: new ScriptedProvider({
        script: [{ toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { bin: 4 } }] }, { content: 'dropped' }],
      }),
      tools: [dropClaw(dropped)],
      reviewer: remoteReviewer({ bus, subjects: createSubjects(prefix) }),
      approvalTimeoutMs: 30_000,
    })
    expect((await agent.run('Drop into bin 4.')).output).toBe('dropped')
    expect(dropped).toEqual([4])
    expect(await reviewer.stop('SIGTERM')).toBe(0)
    expect(await watcher.stop('SIGTERM')).toBe(0)
    expect(server.violations()).toEqual([])
  }, 60_000)
})
