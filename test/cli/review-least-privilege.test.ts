/**
 * `signalbox review` as a least-privilege user: on a nats-server whose authorization block is the
 * generator's, the reviewer runs as its own user with `--inbox-prefix`, `--consumer-prefix` and
 * `--stream-access check`, and decides an agent's request (the tool runs once). Without those
 * flags the same user cannot work (it may not create the stream or read the shared inbox).
 */

import { remoteReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { authorizationBlock, rolePermissions } from '@signalbox/actors/trust'
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

let server: ConfigServer | undefined
let bus: NatsBus | undefined
afterEach(async () => {
  await cleanupAll()
  await bus?.close()
  await server?.dispose()
})

describe('signalbox review under least privilege', () => {
  it('runs as the reviewer user of a generated config and decides a request', async () => {
    const block = authorizationBlock([
      { login: { user: 'claw', password: 'pw-claw' }, permissions: agentPermissions },
      { login: { user: 'tina', password: 'pw-tina' }, permissions: reviewerPermissions },
    ])
    server = await startConfigServer(() => block)
    bus = await connectNatsBus({
      servers: server.url,
      prefix,
      user: 'claw',
      pass: 'pw-claw',
      inboxPrefix: agentPermissions.inboxPrefix,
      consumerPrefix: agentPermissions.name,
    })
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
    const drop = tool({
      name: 'drop_claw',
      description: 'Drop the claw. Irreversible.',
      schema: z.object({ bin: z.number() }),
      needsApproval: true,
      execute: ({ bin }) => {
        dropped.push(bin)
        return `dropped into bin ${bin}`
      },
    })
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
})
