/**
 * `signalbox tools serve --approve … --trust FILE`: a tool host process that verifies approvals.
 * Under the generated permissions, with signing on and every actor in its own process or
 * connection: the agent's approved call runs once on the host; a compromised agent (a raw client
 * on the agent's own user) calling the tool directly, or replaying the real decision, is refused,
 * the refusals are audited by the host and signed with its key, and the server logs no permission
 * violation. The same for an MCP server behind `--mcp`. And what the command says when it does not
 * verify, or is given what it cannot use.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, realpath, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { discoverTools, readAudit, remoteReviewer, serveReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import {
  authorizationBlock,
  createSigner,
  createTrustPolicy,
  newUserSeed,
  rolePermissions,
  verifyAuditEntry,
} from '@signalbox/actors/trust'
import { createAgent, policyReviewer, type Tool } from '@signalbox/core'
import { type Bus, createSubjects, type Subjects, usedApprovalsBucket } from '@signalbox/core/bus'
import { decodeMessage, ErrorMessage, encodeMessage, type ToolCallMessage, ToolResultMessage } from '@signalbox/core/protocol'
import { ScriptedProvider } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { uniquePrefix } from '../support/env.ts'
import { type ConfigServer, startConfigServer } from '../support/nats-config-server.ts'
import { busArgs, cleanupAll, FIXTURES, NATS_URL, ROOT, runCli, startProcess } from './support.ts'

const FILESYSTEM_SERVER = path.join(ROOT, 'packages/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js')
const CLAW_TOOLS = path.join(FIXTURES, 'claw-tools.ts')
const Reply = z.discriminatedUnion('type', [ToolResultMessage, ErrorMessage])

let dir: string | undefined
let server: ConfigServer | undefined
const buses: NatsBus[] = []
afterEach(async () => {
  await cleanupAll()
  for (const bus of buses.splice(0).reverse()) await bus.close()
  await server?.dispose()
  if (dir) await rm(dir, { recursive: true, force: true })
  dir = server = undefined
})

async function tempDir(): Promise<string> {
  dir = await realpath(await mkdtemp(path.join(os.tmpdir(), 'signalbox-enforcing-')))
  return dir
}

/** A raw `tool.call` (what a compromised agent sends), with any approval and idempotency key. */
async function rawCall(bus: Bus, subjects: Subjects, call: Omit<ToolCallMessage, 'v' | 'type' | 'deadline'>, key: string) {
  const message: ToolCallMessage = { v: 1, type: 'tool.call', deadline: Date.now() + 30_000, ...call }
  const response = await bus.request(subjects.tool(call.toolName), encodeMessage(message), {
    timeoutMs: 10_000,
    headers: { 'Signalbox-Idempotency-Key': key },
  })
  const decoded = decodeMessage(response.data, Reply)
  if (!decoded.ok) throw decoded.error
  const reply = decoded.value
  return reply.type === 'error' ? { code: reply.error.code, reason: reply.error.details?.reason } : { output: reply.output }
}

describe('signalbox tools serve --trust (a host that verifies approvals)', () => {
  it('under the generated permissions, signed: runs the approved call once, refuses a compromised agent, audits and signs the refusals', async () => {
    const prefix = 'enforce.v1'
    const subjects = createSubjects(prefix)
    const work = await tempDir()
    const keys = { claw: createSigner(newUserSeed()), tina: createSigner(newUserSeed()), host: createSigner(newUserSeed()) }
    const seeds = { tina: newUserSeed(), host: newUserSeed() }
    keys.tina = createSigner(seeds.tina)
    keys.host = createSigner(seeds.host)
    const file = (name: string, text: string) => {
      const where = path.join(work, name)
      writeFileSync(where, text)
      return where
    }
    const trustFile = file(
      'trust.json',
      JSON.stringify({
        keys: { [keys.tina.publicKey]: 'tina', [keys.claw.publicKey]: 'claw agent' },
        reviewers: { drop_claw: [keys.tina.publicKey] },
      }),
    )
    const drops = path.join(work, 'drops.log')
    const permissions = {
      claw: rolePermissions('agent', { prefix, agent: 'claw' }),
      tina: rolePermissions('reviewer', { prefix, name: 'tina' }),
      toolhost: rolePermissions('tool-host', { prefix }),
      observer: rolePermissions('observer', { prefix }),
    }
    server = await startConfigServer(() =>
      authorizationBlock([
        { login: { user: 'claw', password: 'pw-claw' }, permissions: permissions.claw },
        { login: { nkey: keys.tina.publicKey }, permissions: permissions.tina },
        { login: { user: 'toolhost', password: 'pw-toolhost' }, permissions: permissions.toolhost },
        { login: { user: 'observer', password: 'pw-observer' }, permissions: permissions.observer },
      ]),
    )
    const url = server.url
    // The agent's user creates the stream; the others only check it.
    const agentBus = await connectNatsBus({
      servers: url,
      prefix,
      user: 'claw',
      pass: 'pw-claw',
      inboxPrefix: permissions.claw.inboxPrefix,
      consumerPrefix: 'claw',
      name: 'claw',
    })
    buses.push(agentBus)

    const hostArgs = [
      'tools',
      'serve',
      CLAW_TOOLS,
      '--approve',
      'drop_claw',
      '--trust',
      trustFile,
      '--signing-key',
      file('host.nk', seeds.host),
      ...['--nats', url, '--prefix', prefix, '--user', 'toolhost', '--password', 'pw-toolhost'],
      ...['--inbox-prefix', permissions.toolhost.inboxPrefix, '--stream-access', 'check'],
    ]
    const host = startProcess(hostArgs, { name: 'tools', env: { CLAW_DROPS: drops } })
    const reviewer = startProcess(
      [
        'review',
        '--auto',
        'approve',
        '--name',
        'tina',
        '--nkey',
        file('tina.nk', seeds.tina),
        ...['--nats', url, '--prefix', prefix, '--inbox-prefix', permissions.tina.inboxPrefix],
        ...['--consumer-prefix', 'tina', '--stream-access', 'check'],
      ],
      { name: 'review' },
    )
    await host.waitFor(`enforcing approvals for drop_claw: signed decisions checked against ${trustFile}`)
    expect(host.stderr).toContain(`signed as ${keys.host.publicKey}`)
    await host.waitFor(`used approvals remembered in the KV bucket ${usedApprovalsBucket(prefix)}, for every host of the pool`)
    await reviewer.waitFor('reviewing approval requests')

    const agentPolicy = createTrustPolicy({
      keys: { [keys.tina.publicKey]: 'tina' },
      reviewers: { drop_claw: [keys.tina.publicKey] },
      ownKey: keys.claw.publicKey,
    })
    const tools = await discoverTools({ bus: agentBus, subjects, names: ['move_claw', 'drop_claw'] })
    const provider = new ScriptedProvider({
      script: [
        { toolCalls: [{ id: 'call_move', name: 'move_claw', arguments: { x: 2, y: 5 } }] },
        { toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { bin: 3 } }] },
        { content: 'dropped' },
      ],
    })
    const agent = createAgent({
      id: 'claw',
      provider,
      tools,
      reviewer: remoteReviewer({ bus: agentBus, subjects, trust: agentPolicy, signer: keys.claw }),
      approvalTimeoutMs: 30_000,
    })
    let applied: Record<string, unknown> | undefined
    agent.on('approval.decided', (event) => {
      applied = event.decision.evidence
    })
    const result = await agent.run('Drop the penguin into bin 3.')
    expect(result.output).toBe('dropped')
    expect(readFileSync(drops, 'utf8')).toBe('3\n')
    expect(applied).toMatchObject({ signer: keys.tina.publicKey, callId: 'call_drop' })

    // A compromised agent, on the agent's own user (which may publish tool calls): straight to the tool.
    const call = { callId: 'call_x', toolName: 'drop_claw', agentId: 'claw', runId: 'run-x', arguments: { bin: 9 } }
    expect(await rawCall(agentBus, subjects, call, 'run-x:call_x')).toEqual({ code: 'APPROVAL_REQUIRED', reason: 'missing' })
    // The real decision, replayed for the same call in another run.
    const replay = { ...call, callId: 'call_drop', runId: 'run-y', arguments: { bin: 3 }, approval: applied }
    expect(await rawCall(agentBus, subjects, replay, 'run-y:call_drop')).toEqual({ code: 'APPROVAL_INVALID', reason: 'replayed' })
    expect(readFileSync(drops, 'utf8')).toBe('3\n')
    await host.waitFor(/refused .*drop_claw call_drop .*APPROVAL_INVALID replayed/)
    expect(host.stdout).toMatch(/refused .*drop_claw call_x .*APPROVAL_REQUIRED missing/)

    // The refusals are on the audit trail, written by the host and signed with its key.
    const observer = await connectNatsBus({
      servers: url,
      prefix,
      user: 'observer',
      pass: 'pw-observer',
      inboxPrefix: permissions.observer.inboxPrefix,
      consumerPrefix: 'observer',
      durable: { access: 'check' },
    })
    buses.push(observer)
    const trail = await readAudit({ bus: observer, subjects, idleMs: 500 })
    const refused = trail.filter((e) => e.kind === 'tool.refused')
    expect(refused.map((e) => [e.callId, e.signer])).toEqual([
      ['call_x', keys.host.publicKey],
      ['call_drop', keys.host.publicKey],
    ])
    for (const entry of refused) expect(verifyAuditEntry(entry, { writers: [keys.host.publicKey] })).toEqual([])

    expect(await host.stop('SIGTERM')).toBe(0)
    expect(host.stderr).not.toMatch(/warning|violation/i)
    // The host restarts (a new process, nothing in memory): the pool's ledger still knows the decision
    // was used. A replay is refused; the agent's retry of its own call gets the answer, no second drop.
    const restarted = startProcess(hostArgs, { name: 'tools-again', env: { CLAW_DROPS: drops } })
    await restarted.waitFor('enforcing approvals for drop_claw')
    const again = { ...replay, runId: 'run-z' }
    expect(await rawCall(agentBus, subjects, again, 'run-z:call_drop')).toEqual({ code: 'APPROVAL_INVALID', reason: 'replayed' })
    const retry = { ...replay, runId: result.runId }
    expect(await rawCall(agentBus, subjects, retry, `${result.runId}:call_drop`)).toEqual({ output: 'dropped into bin 3' })
    expect(readFileSync(drops, 'utf8')).toBe('3\n')
    expect(await restarted.stop('SIGTERM')).toBe(0)
    expect(restarted.stderr).not.toMatch(/warning|violation/i)
    expect(await reviewer.stop('SIGTERM')).toBe(0)
    // None by the tool host. (The `agents.*.alive` heartbeats are not in the generated tables yet: the
    // only violations allowed here, until they are.)
    expect(server.violations().filter((v) => v.user === 'toolhost')).toEqual([])
    const lines = server.log().split('\n')
    expect(lines.filter((line) => /Violation/.test(line) && !/Subject "enforce\.v1\.agents\.[*a-z]+\.alive"/.test(line))).toEqual(
      [],
    )
  }, 90_000)

  it('with --mcp: an MCP server behind an enforcing host writes only the approved file', async () => {
    const prefix = uniquePrefix()
    const subjects = createSubjects(prefix)
    const work = await tempDir()
    const tina = createSigner(newUserSeed())
    const trustFile = path.join(work, 'trust.json')
    writeFileSync(trustFile, JSON.stringify({ keys: { [tina.publicKey]: 'tina' }, reviewers: { write_file: [tina.publicKey] } }))
    const host = startProcess(
      [
        'tools',
        'serve',
        '--mcp',
        `"${process.execPath}" ${FILESYSTEM_SERVER} '${work}'`,
        '--approve',
        'write_file',
        '--trust',
        trustFile,
        ...busArgs(prefix),
      ],
      { name: 'tools' },
    )
    await host.waitFor(/enforcing approvals for write_file/)
    expect(host.stderr).toContain('refusals audited (unsigned: no --signing-key)')

    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'mcp-agent' })
    buses.push(bus)
    const service = serveReviewer({
      bus: await connectNatsBus({ servers: NATS_URL, prefix, name: 'mcp-reviewer' }).then((b) => {
        buses.push(b)
        return b
      }),
      subjects,
      signer: tina,
      reviewer: policyReviewer(() => ({ approved: true }), { name: 'tina' }),
    })
    await service.ready
    const tools: Tool<any>[] = await discoverTools({ bus, subjects, names: ['write_file'] })
    const approved = path.join(work, 'approved.txt')
    const forced = path.join(work, 'forced.txt')
    const provider = new ScriptedProvider({
      script: [
        { toolCalls: [{ id: 'c1', name: 'write_file', arguments: { path: approved, content: 'yes' } }] },
        { content: 'done' },
      ],
    })
    const agent = createAgent({
      id: 'writer',
      provider,
      tools,
      reviewer: remoteReviewer({ bus, subjects }),
      approvalTimeoutMs: 30_000,
    })
    expect((await agent.run('write it')).output).toBe('done')
    expect(readFileSync(approved, 'utf8')).toBe('yes')

    const call = {
      callId: 'c2',
      toolName: 'write_file',
      agentId: 'writer',
      runId: 'run-x',
      arguments: { path: forced, content: 'no' },
    }
    expect(await rawCall(bus, subjects, call, 'run-x:c2')).toEqual({ code: 'APPROVAL_REQUIRED', reason: 'missing' })
    expect(existsSync(forced)).toBe(false)
    service.close()
    expect(await host.stop('SIGTERM')).toBe(0)
  }, 60_000)

  it('says when it does not verify; refuses what it cannot use', async () => {
    const prefix = uniquePrefix()
    const plain = startProcess(['tools', 'serve', CLAW_TOOLS, '--approve', 'drop_claw', ...busArgs(prefix)], { name: 'tools' })
    await plain.waitFor(/approvals not verified: drop_claw runs whenever called; .*give --trust <file> to enforce it here/)
    expect(await plain.stop('SIGTERM')).toBe(0)

    const work = await tempDir()
    const trustFile = path.join(work, 'trust.json')
    const tina = createSigner(newUserSeed())
    writeFileSync(trustFile, JSON.stringify({ keys: { [tina.publicKey]: 'tina' }, reviewers: { move_claw: [tina.publicKey] } }))
    const nobody = startProcess(['tools', 'serve', CLAW_TOOLS, '--approve', 'all', '--trust', trustFile, ...busArgs(prefix)], {
      name: 'tools',
    })
    await nobody.waitFor('the trust policy names no reviewer for drop_claw: every call of it will be refused')
    expect(await nobody.stop('SIGTERM')).toBe(0)

    const skew = await runCli(['tools', 'serve', CLAW_TOOLS, '--clock-skew', '5000', ...busArgs(prefix)])
    expect(skew.code).toBe(2)
    expect(skew.stderr).toContain('--clock-skew is for a host that verifies approvals: give --trust <file>')
    const ledger = await runCli(['tools', 'serve', CLAW_TOOLS, '--ledger-bucket', 'claw_ledger', ...busArgs(prefix)])
    expect(ledger.code).toBe(2)
    expect(ledger.stderr).toContain('--ledger-bucket is for a host that verifies approvals: give --trust <file>')
    const typo = await runCli(['tools', 'serve', CLAW_TOOLS, '--approve', 'drop_clawz', '--trust', trustFile, ...busArgs(prefix)])
    expect(typo.code).toBe(1)
    expect(typo.stderr).toContain(
      `--approve names "drop_clawz", which ${CLAW_TOOLS} does not export (its tools: move_claw, drop_claw)`,
    )
    const badPolicy = path.join(work, 'bad.json')
    writeFileSync(badPolicy, '{"keys": {}, "reviewer": []}')
    const bad = await runCli(['tools', 'serve', CLAW_TOOLS, '--trust', badPolicy, ...busArgs(prefix)])
    expect(bad.code).toBe(1)
    expect(bad.stderr).toContain('unknown field "reviewer"')
  }, 60_000)
})
