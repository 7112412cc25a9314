/**
 * A consumer the server's permissions refuse to create (a reviewer service started for a group
 * its user was not generated for) fails at once with BUS_PERMISSION_DENIED: `ready` rejects and
 * says which consumer, instead of the service retrying forever and never becoming ready.
 */
import { serveReviewer } from '@signalbox/actors'
import { connectNatsBus } from '@signalbox/actors/nats'
import { authorizationBlock, rolePermissions } from '@signalbox/actors/trust'
import { policyReviewer } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { afterEach, describe, expect, it } from 'vitest'
import { type ConfigServer, startConfigServer } from '../../../../test/support/nats-config-server.ts'

const prefix = 'refused.v1'
const subjects = createSubjects(prefix)
let server: ConfigServer | undefined
const closers: (() => unknown)[] = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
  await server?.dispose()
  server = undefined
})

describe('a consumer the permissions refuse', () => {
  it('fails the service with BUS_PERMISSION_DENIED, promptly', async () => {
    const agent = rolePermissions('agent', { prefix, agent: 'claw' })
    // Generated for the reviewers of the hotel agent only (group reviewers-hotel).
    const tina = rolePermissions('reviewer', { prefix, name: 'tina', agent: 'hotel' })
    server = await startConfigServer(() =>
      authorizationBlock([
        { login: { user: 'claw', password: 'pw-claw' }, permissions: agent },
        { login: { user: 'tina', password: 'pw-tina' }, permissions: tina },
      ]),
    )
    const agentBus = await connectNatsBus({
      servers: server.url,
      prefix,
      user: 'claw',
      pass: 'pw-claw',
      inboxPrefix: agent.inboxPrefix,
    })
    closers.push(() => agentBus.close())
    const bus = await connectNatsBus({
      servers: server.url,
      prefix,
      user: 'tina',
      pass: 'pw-tina',
      inboxPrefix: tina.inboxPrefix,
      consumerPrefix: 'tina',
      durable: { access: 'check' },
    })
    closers.push(() => bus.close())
    // Started for every agent: the shared group `reviewers`, which this user may not create.
    const service = serveReviewer({ bus, subjects, reviewer: policyReviewer(() => ({ approved: true }), { name: 'tina' }) })
    closers.push(() => service.close())
    const outcome = await Promise.race([
      service.ready.then(
        () => 'ready',
        (error: unknown) => error,
      ),
      new Promise((resolve) => setTimeout(() => resolve('still waiting after 10 s'), 10_000)),
    ])
    expect(outcome).toMatchObject({ code: 'BUS_PERMISSION_DENIED' })
    expect(String((outcome as Error).message)).toContain('reviewers')
  }, 30_000)
})
