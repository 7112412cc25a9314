/**
 * Least privilege, checked by a real nats-server: an authorization config built by the generator,
 * one user per role, raw NATS clients (with each role's inbox prefix and consumer names). Each role
 * does its job; what it must not do fails with a permission violation and leaves nothing behind.
 */
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { AckPolicy, DeliverPolicy, type JetStreamManager, jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect, errors, type NatsConnection } from '@nats-io/transport-node'
import { permissionsTable } from '@signalbox/actors/internal'
import { defaultStreamName } from '@signalbox/actors/nats'
import { authorizationBlock, ROLES, type Role, type RolePermissions, rolePermissions } from '@signalbox/actors/trust'
import {
  createSubjects,
  defaultDurableSubjects,
  SUBJECT_FAMILIES,
  type SubjectFamily,
  type SubjectFamilyName,
  type SubjectToken,
  type SubjectUse,
} from '@signalbox/core/bus'
import { agentPurpose, subjectCovers, subjectMatches } from '@signalbox/core/internal'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ConfigServer, startConfigServer } from '../../../../test/support/nats-config-server.ts'

const ROOT = path.resolve(import.meta.dirname, '../../../..')
const prefix = 'perm.v1'
const S = defaultStreamName(prefix)
const subjects = createSubjects(prefix)
const scope = { prefix }
const users: Record<string, RolePermissions> = {
  agent: rolePermissions('agent', { ...scope, agent: 'claw' }),
  reviewer: rolePermissions('reviewer', scope),
  answerer: rolePermissions('answerer', scope),
  steering: rolePermissions('steering', scope),
  'tool-host': rolePermissions('tool-host', scope),
  observer: rolePermissions('observer', scope),
  console: rolePermissions('console', scope),
}
const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value))

let server: ConfigServer
const connections: NatsConnection[] = []
const clients: Partial<Record<Role, NatsConnection>> = {}

async function client(role: Role): Promise<NatsConnection> {
  const permissions = users[role] as RolePermissions
  const nc = await connect({ servers: server.url, user: role, pass: `pw-${role}`, inboxPrefix: permissions.inboxPrefix })
  connections.push(nc)
  return nc
}

/** A publish the server refuses: the request fails with a permission violation for that subject. */
async function expectPublishDenied(nc: NatsConnection, subject: string): Promise<void> {
  const error = await nc.request(subject, encode({ v: 1 }), { timeout: 3_000 }).then(
    () => undefined,
    (e: unknown) => e,
  )
  // nats.js fails the request with a RequestError caused by the server's violation notice.
  const violation = error instanceof errors.RequestError ? error.cause : error
  expect(violation, `publish to ${subject}`).toBeInstanceOf(errors.PermissionViolationError)
  expect((violation as InstanceType<typeof errors.PermissionViolationError>).operation).toBe('publish')
  expect((violation as InstanceType<typeof errors.PermissionViolationError>).subject).toBe(subject)
}

async function expectSubscribeDenied(nc: NatsConnection, subject: string): Promise<void> {
  const sub = nc.subscribe(subject)
  const closed = await sub.closed
  expect(closed, `subscribe to ${subject}`).toBeInstanceOf(errors.PermissionViolationError)
}

async function pullOne(nc: NatsConnection, consumer: string, filter: string, jsm?: JetStreamManager) {
  const manager = jsm ?? (await jetstreamManager(nc))
  await manager.consumers.add(S, {
    name: consumer,
    filter_subject: filter,
    ack_policy: AckPolicy.Explicit,
    deliver_policy: DeliverPolicy.All,
  })
  const c = await jetstream(nc).consumers.get(S, consumer)
  const message = await c.next({ expires: 5_000 })
  if (!message) throw new Error(`nothing on ${filter}`)
  await message.ackAck()
  return JSON.parse(new TextDecoder().decode(message.data)) as Record<string, unknown>
}

beforeAll(async () => {
  const block = authorizationBlock(
    Object.entries(users).map(([role, permissions]) => ({ login: { user: role, password: `pw-${role}` }, permissions })),
  )
  server = await startConfigServer(() => block)
  for (const role of Object.keys(users) as Role[]) clients[role] = await client(role)
  // The agent creates the stream, as its bus does at connect.
  const jsm = await jetstreamManager(clients.agent as NatsConnection)
  await jsm.streams.add({ name: S, subjects: defaultDurableSubjects(prefix) })
})

afterAll(async () => {
  for (const nc of connections) await nc.close()
  await server?.dispose()
})

describe('each role does its job under its permissions', () => {
  it('agent → reviewer → agent: request, decision, both through JetStream consumers the roles own', async () => {
    const agent = clients.agent as NatsConnection
    const reviewer = clients.reviewer as NatsConnection
    await jetstream(agent).publish(subjects.approvals('claw'), encode({ type: 'approval.request', requestId: 'r1' }), {
      msgID: 'r1',
    })
    const request = await pullOne(reviewer, 'reviewers', `${prefix}.approvals.*`)
    expect(request.requestId).toBe('r1')
    await jetstream(reviewer).publish(subjects.approvalDecisions('claw'), encode({ type: 'approval.decision', requestId: 'r1' }))
    const decision = await pullOne(agent, 'claw_claw_decisions', subjects.approvalDecisions('claw'))
    expect(decision.requestId).toBe('r1')
    // The agent writes its own audit entry; the observer reads the trail.
    await jetstream(agent).publish(subjects.audit('claw', 'approval.granted'), encode({ type: 'audit', requestId: 'r1' }))
    const entry = await pullOne(clients.observer as NatsConnection, 'observer_audit', `${prefix}.audit.>`)
    expect(entry.requestId).toBe('r1')
  })

  it('answerer answers a question; steering reaches the agent; a tool host answers a call; control is request/reply', async () => {
    const agent = clients.agent as NatsConnection
    await jetstream(agent).publish(subjects.ask('claw'), encode({ type: 'question', questionId: 'q1' }))
    expect((await pullOne(clients.answerer as NatsConnection, 'answerers', `${prefix}.ask.*`)).questionId).toBe('q1')
    await jetstream(clients.answerer as NatsConnection).publish(
      subjects.answers('claw'),
      encode({ type: 'answer', questionId: 'q1' }),
    )
    expect((await pullOne(agent, 'claw_claw_answers', subjects.answers('claw'))).questionId).toBe('q1')

    await jetstream(clients.steering as NatsConnection).publish(subjects.steer('claw'), encode({ type: 'steer', steerId: 's1' }))
    expect((await pullOne(agent, 'claw_claw_steer', subjects.steer('claw'))).steerId).toBe('s1')

    const host = clients['tool-host'] as NatsConnection
    host.subscribe(subjects.tool('drop_claw'), {
      queue: 'signalbox-tools',
      callback: (_e, m) => {
        m.respond(encode({ type: 'tool.result' }))
      },
    })
    await host.flush()
    const result = await agent.request(subjects.tool('drop_claw'), encode({ type: 'tool.call' }), { timeout: 5_000 })
    expect(result.json<{ type: string }>().type).toBe('tool.result')

    agent.subscribe(subjects.control('claw'), {
      callback: (_e, m) => {
        m.respond(encode({ type: 'control.reply' }))
      },
    })
    await agent.flush()
    const reply = await (clients.steering as NatsConnection).request(
      subjects.control('claw'),
      encode({ type: 'control.status' }),
      {
        timeout: 5_000,
      },
    )
    expect(reply.json<{ type: string }>().type).toBe('control.reply')
  })

  it('the observer sees agent events; the console reviews, answers, steers and reads the audit', async () => {
    const observer = clients.observer as NatsConnection
    const seen = observer.subscribe(subjects.events('claw'), { max: 1 })
    await observer.flush()
    ;(clients.agent as NatsConnection).publish(subjects.events('claw', 'tool.end'), encode({ type: 'event' }))
    for await (const message of seen) expect(message.subject).toBe(`${prefix}.agents.claw.events.tool_end`)

    const console = clients.console as NatsConnection
    await jetstream(clients.agent as NatsConnection).publish(subjects.approvals('claw'), encode({ requestId: 'r2' }))
    expect((await pullOne(console, 'console_approvals', `${prefix}.approvals.*`)).requestId).toBe('r1')
    await jetstream(console).publish(subjects.approvalDecisions('claw'), encode({ requestId: 'r2' }))
    await jetstream(console).publish(subjects.steer('claw'), encode({ steerId: 's2' }))
  })
})

describe('forbidden actions fail', () => {
  it('a tool host cannot read approvals: no subscription, no consumer of its own, no pull from the reviewers', async () => {
    const host = clients['tool-host'] as NatsConnection
    await expectSubscribeDenied(host, `${prefix}.approvals.>`)
    await expectPublishDenied(host, `$JS.API.CONSUMER.CREATE.${S}.toolhost_x.${prefix}.approvals.*`)
    await expectPublishDenied(host, `$JS.API.CONSUMER.MSG.NEXT.${S}.reviewers`)
    await expectSubscribeDenied(host, '_INBOX.>')
  })

  it('an observer cannot steer or cancel', async () => {
    const observer = clients.observer as NatsConnection
    await expectPublishDenied(observer, subjects.steer('claw'))
    await expectPublishDenied(observer, subjects.control('claw'))
  })

  it('a reviewer cannot publish agent events, audit entries or tool results, nor read other inboxes', async () => {
    const reviewer = clients.reviewer as NatsConnection
    await expectPublishDenied(reviewer, subjects.events('claw', 'tool.end'))
    await expectPublishDenied(reviewer, subjects.audit('claw', 'approval.granted'))
    await expectPublishDenied(reviewer, `${users.agent?.inboxPrefix}.forged-tool-result`)
    await expectSubscribeDenied(reviewer, `${users.agent?.inboxPrefix}.>`)
  })

  it("an agent cannot publish decisions or answers, nor delete the reviewers' consumer", async () => {
    const agent = clients.agent as NatsConnection
    await expectPublishDenied(agent, subjects.approvalDecisions('claw'))
    await expectPublishDenied(agent, subjects.answers('claw'))
    await expectPublishDenied(agent, `$JS.API.CONSUMER.DELETE.${S}.reviewers`)
    // The consumer is still there, and no decision was stored by the agent.
    const jsm = await jetstreamManager(clients.reviewer as NatsConnection)
    expect((await jsm.consumers.info(S, 'reviewers')).name).toBe('reviewers')
  })

  it('a steering operator cannot decide or read approvals', async () => {
    const steering = clients.steering as NatsConnection
    await expectPublishDenied(steering, subjects.approvalDecisions('claw'))
    await expectSubscribeDenied(steering, `${prefix}.approvals.*`)
  })
})

describe('one source: the subject families', () => {
  const all = createSubjects(prefix)
  /** A concrete subject of each family, with sample tokens (what the code builds at run time). */
  const sample = (family: SubjectFamilyName, agent = 'claw', limited: Partial<Record<SubjectToken, string>> = {}) =>
    all.pattern(family, {
      agent,
      tool: 'drop_claw',
      run: 'run_1',
      type: 'tool.end',
      kind: 'approval.granted',
      component: 'reviewer',
      runtime: 'rt1',
      ...limited,
    })

  it('every subject builder is a family (a new subject cannot be added without saying who uses it)', () => {
    const builders = Object.entries(all)
      .filter(([name, value]) => typeof value === 'function' && !['pattern', 'eventsAll'].includes(name))
      .map(([name]) => name)
    expect(builders.sort()).toEqual(Object.keys(SUBJECT_FAMILIES).sort())
  })

  it('every consumer the code makes has its purpose in the table (else no role could be granted it)', () => {
    const sources = execFileSync('git', ['ls-files', 'packages/*/src/**/*.ts'], { cwd: ROOT, encoding: 'utf8' })
      .split('\n')
      .filter((file) => file && !file.endsWith('subject-families.ts'))
    const inCode = new Set<string>()
    for (const file of sources) {
      const text = readFileSync(path.join(ROOT, file), 'utf8')
      for (const [, purpose] of text.matchAll(/(?:purpose: |privatePurpose: |agentPurpose\()'([a-z_]+)'/g))
        inCode.add(purpose as string)
    }
    const inTable = new Set(
      Object.values(SUBJECT_FAMILIES as Record<string, SubjectFamily>).flatMap((family) =>
        Object.values(family.consume ?? {}).flatMap((uses) => (uses ?? []).map((use) => use.purpose)),
      ),
    )
    expect(inCode.size).toBeGreaterThanOrEqual(9)
    expect([...inCode].filter((purpose) => !inTable.has(purpose))).toEqual([])
  })

  it('every family but the reserved one is published by some role and read by another', () => {
    for (const [name, family] of Object.entries(SUBJECT_FAMILIES) as [SubjectFamilyName, SubjectFamily][]) {
      if (name === 'directory') continue
      expect(Object.keys(family.publish ?? {}).length, name).toBeGreaterThan(0)
      expect(Object.keys({ ...family.subscribe, ...family.consume }).length, name).toBeGreaterThan(0)
    }
  })

  it("each subject the code builds is granted to every role that uses it, and to no role that doesn't", () => {
    const scopeOf = (role: Role) =>
      role === 'agent' ? { prefix, agent: 'claw', children: ['flights'] } : { prefix, ...(role === 'tool-host' ? {} : {}) }
    for (const role of ROLES) {
      const p = rolePermissions(role, scopeOf(role))
      const publishes = (subject: string) =>
        p.publish.some((r) => subjectMatches(r.subject, subject)) && !p.deny.some((r) => subjectMatches(r.subject, subject))
      const subscribes = (subject: string) => p.subscribe.some((r) => subjectCovers(r.subject, subject))
      for (const [name, family] of Object.entries(SUBJECT_FAMILIES) as [SubjectFamilyName, SubjectFamily][]) {
        const use = family.publish?.[role] as SubjectUse | undefined
        const subject = sample(name, use?.agents === 'children' ? 'flights' : 'claw', use?.tokens)
        expect(publishes(subject), `${role} publishes ${subject}`).toBe(use !== undefined)
        const sub = family.subscribe?.[role]
        expect(subscribes(sample(name)), `${role} subscribes ${sample(name)}`).toBe(sub !== undefined)
        for (const consumer of family.consume?.[role] ?? []) {
          const purpose = consumer.perAgent ? agentPurpose(consumer.purpose ?? '', 'claw') : consumer.purpose
          const consumerName = consumer.group ?? `${p.name}_${purpose}`
          // The filter the code uses: the agent's own subject, or every agent's for the other roles.
          const filter =
            role === 'agent' ? all.pattern(name, consumer.agents === 'children' ? {} : { agent: 'claw' }) : all.pattern(name)
          const create = `$JS.API.CONSUMER.CREATE.${S}.${consumerName}.${filter}`
          expect(publishes(create), `${role} creates ${create}`).toBe(true)
          expect(publishes(`$JS.API.CONSUMER.MSG.NEXT.${S}.${consumerName}`), `${role} pulls ${consumerName}`).toBe(true)
          expect(publishes(`$JS.ACK.${S}.${consumerName}.1.2.3.4.5`), `${role} acks ${consumerName}`).toBe(true)
        }
      }
    }
  })

  it("the agents' heartbeats are granted: the agent publishes them, reviewers and the console hear them", () => {
    const alive = all.alive('claw')
    expect(rolePermissions('agent', { prefix, agent: 'claw' }).publish.map((r) => r.subject)).toContain(alive)
    for (const role of ['reviewer', 'console'] as const) {
      expect(rolePermissions(role, { prefix }).subscribe.map((r) => r.subject)).toContain(all.pattern('alive'))
    }
  })

  it('a parent agent is granted its children only: their runs, cancels, heartbeats and results', () => {
    const lone = rolePermissions('agent', { prefix, agent: 'claw' })
    const parent = rolePermissions('agent', { prefix, agent: 'claw', children: ['flights'] })
    const granted = (p: RolePermissions) => p.publish.map((r) => r.subject)
    expect(granted(lone)).not.toContain(all.agentRun('flights'))
    expect(granted(parent)).toContain(all.agentRun('flights'))
    expect(granted(parent)).toContain(all.control('flights'))
    expect(granted(parent)).not.toContain(all.agentRun('hotels'))
    expect(granted(parent)).toContain(all.pattern('runHeartbeat'))
    expect(granted(parent)).toContain(`$JS.API.CONSUMER.CREATE.${S}.claw_results.${all.pattern('runResult')}`)
    expect(granted(lone).some((s) => s.includes('claw_results'))).toBe(false)
    // Every agent may be hosted: it answers run requests for itself and publishes their results.
    expect(lone.subscribe.map((r) => r.subject)).toContain(all.agentRun('claw'))
    expect(granted(lone)).toContain(all.pattern('runResult'))
  })

  it('a host serving several agents on one connection: one consumer per agent, each on its own subject', () => {
    const host = rolePermissions('agent', { prefix, agent: ['planner', 'trains'], name: 'hosta' })
    expect(host.consumers).toEqual(
      expect.arrayContaining(['hosta_planner_decisions', 'hosta_trains_decisions', 'hosta_planner_steer', 'hosta_trains_steer']),
    )
    const granted = host.publish.map((r) => r.subject)
    expect(granted).toContain(`$JS.API.CONSUMER.CREATE.${S}.hosta_trains_steer.${all.steer('trains')}`)
    expect(granted).toContain(all.approvals('planner'))
    expect(granted).toContain(all.alive('trains'))
    expect(host.subscribe.map((r) => r.subject)).toEqual(
      expect.arrayContaining([all.agentRun('planner'), all.agentRun('trains')]),
    )
    expect(() => rolePermissions('agent', { prefix, agent: ['planner', 'trains'] })).toThrow(/--name/)
  })

  it('a user with several roles gets each role’s grants (a person who reviews and answers)', () => {
    const both = rolePermissions(['reviewer', 'answerer'], { prefix, name: 'tina' })
    expect(both.role).toBe('reviewer+answerer')
    expect(both.consumers).toEqual(expect.arrayContaining(['reviewers', 'tina_decided', 'tina_questions', 'tina_answered']))
  })
})

describe('docs/security.md', () => {
  it('shows, for every role, the table the generator makes', () => {
    const doc = readFileSync(new URL('../../../../docs/security.md', import.meta.url), 'utf8')
    for (const role of ROLES) {
      const permissions = rolePermissions(role, role === 'agent' ? { agent: 'claw' } : {})
      expect(doc, role).toContain(`### ${role}\n`)
      expect(doc, role).toContain(permissionsTable(permissions))
    }
  })
})
