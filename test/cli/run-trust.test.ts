/**
 * `signalbox run` and `signalbox host` with `--trust FILE` and `--signing-key FILE`, as real
 * processes over real NATS: bad files are refused with clear errors before anything connects;
 * forged decisions (unsigned, an unknown key, the agent's own key) are rejected, audited by the
 * agent (signed with its key) and never applied; the approval signed by the key the policy allows
 * for the tool runs the tool once. The host also refuses an unsigned cancel.
 */
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { readAudit, sendControl, watchEvents } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { createAgentSystem } from '@signalbox/actors/system'
import { createSigner, newUserSeed, parseTrustPolicy, type Signer, verifyAuditTrail } from '@signalbox/actors/trust'
import type { AgentEvent } from '@signalbox/core'
import { createSubjects, type Subjects } from '@signalbox/core/bus'
import { type ApprovalDecisionMessage, ApprovalRequestMessage, decodeMessage } from '@signalbox/core/protocol'
import { afterEach, beforeAll, describe, expect, it } from 'vitest'
import { uniquePrefix } from '../support/env.ts'
import { FINAL } from './fixtures/vault-agent.ts'
import { busArgs, cleanupAll, deleteStream, NATS_URL, runCli, startProcess, until } from './support.ts'

const MODULE = 'test/cli/fixtures/vault-agent.ts'
const keys = {
  agent: newUserSeed(),
  tina: newUserSeed(),
  bob: newUserSeed(),
  mallory: newUserSeed(),
}
const signers = Object.fromEntries(Object.entries(keys).map(([name, seed]) => [name, createSigner(seed)])) as Record<
  keyof typeof keys,
  Signer
>
/** tina may open vaults; bob is known (he may steer) but may not approve anything. */
const policy = {
  keys: { [signers.tina.publicKey]: 'tina', [signers.bob.publicKey]: 'bob' },
  reviewers: { open_vault: [signers.tina.publicKey] },
  steerers: [signers.bob.publicKey],
  controllers: [signers.bob.publicKey],
}

let tmp = ''
const file = (name: string) => path.join(tmp, name)
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'signalbox-run-trust-'))
  await writeFile(file('trust.json'), JSON.stringify(policy, null, 2))
  await writeFile(file('agent.nk'), keys.agent)
  await writeFile(file('typo.json'), JSON.stringify({ keys: {}, reviewer: [] }))
  await writeFile(file('bad-key.json'), JSON.stringify({ keys: { 'not-a-key': 'tina' } }))
  await writeFile(file('garbage.nk'), 'SUPERSECRETBUTNOTASEED')
  return () => rm(tmp, { recursive: true, force: true })
})

let prefix = ''
afterEach(async () => {
  await cleanupAll()
  if (prefix) await deleteStream(prefix)
  prefix = ''
})

/** What a test sees on the bus: the vault agent's approval requests and its `approval.rejected` events. */
async function observe(bus: NatsBus, subjects: Subjects) {
  const requests: ApprovalRequestMessage[] = []
  const rejected: Extract<AgentEvent, { type: 'approval.rejected' }>[] = []
  const requestsSub = bus.durableConsume(subjects.approvals('vault'), (message) => {
    message.ack()
    const decoded = decodeMessage(message.data, ApprovalRequestMessage)
    if (decoded.ok) requests.push(decoded.value)
  })
  const events = watchEvents({
    bus,
    subjects,
    agentId: 'vault',
    onEvent: (event) => {
      if (event.type === 'approval.rejected') rejected.push(event)
    },
  })
  await Promise.all([requestsSub.ready, events.ready])
  let n = 0
  return {
    requests,
    rejected,
    decide: (decision: object) =>
      bus.durablePublish(subjects.approvalDecisions('vault'), JSON.stringify(decision), { msgId: `decision-${++n}` }),
    close() {
      requestsSub.unsubscribe()
      events.unsubscribe()
    },
  }
}

const decisionFor = (request: ApprovalRequestMessage): ApprovalDecisionMessage => ({
  v: 1,
  type: 'approval.decision',
  requestId: request.requestId,
  callId: request.callId,
  digest: request.digest,
  approved: true,
  reviewer: 'tina',
  decidedAt: Date.now(),
})

describe('signalbox run|host --trust --signing-key', () => {
  it('refuses a missing, malformed or wrong trust policy and a bad signing key, saying which and why', async () => {
    const bus = ['--nats', NATS_URL, '--prefix', uniquePrefix()]
    const run = (...flags: string[]) => runCli(['run', MODULE, '--scripted', ...flags, ...bus])
    // Each kind of failure once (the policy checks themselves: trust/policy-file.test.ts).
    const [missing, typo, garbage, embedded, host, embeddedEnv] = await Promise.all([
      run('--trust', file('missing.json')),
      run('--trust', file('typo.json')),
      run('--signing-key', file('garbage.nk')),
      runCli(['run', MODULE, '--scripted', '--trust', file('trust.json')]),
      runCli(['host', MODULE, '--scripted', '--trust', file('bad-key.json'), ...bus]),
      // Set for the operator's other commands: an embedded run goes on, but says it checks nothing.
      runCli(['run', MODULE, '--scripted', '--auto', 'approve'], {
        env: { SIGNALBOX_TRUST: file('trust.json'), SIGNALBOX_SIGNING_KEY: file('agent.nk') },
      }),
    ])
    expect(embeddedEnv.code).toBe(0)
    expect(embeddedEnv.stdout).toContain(FINAL)
    expect(embeddedEnv.stderr).toContain(
      'warning: $SIGNALBOX_TRUST and $SIGNALBOX_SIGNING_KEY are set but not used: trust policies and signing keys are for agents on a bus (--nats)',
    )
    expect(missing.stderr).toContain(`cannot read the trust policy file ${file('missing.json')}: no such file`)
    expect(typo.stderr).toContain(`the trust policy ${file('typo.json')} is not valid: the document: unknown field "reviewer"`)
    expect(garbage.stderr).toContain(`the signing key file ${file('garbage.nk')} is not a valid nkey seed`)
    expect(garbage.stderr).not.toContain('SUPERSECRET')
    expect(embedded.code).toBe(2)
    expect(embedded.stderr).toContain('--trust and --signing-key are for agents on a bus (--nats)')
    expect(host.code).toBe(1)
    expect(host.stderr).toContain('"not-a-key" is not a public nkey')
    for (const result of [missing, typo, garbage]) {
      expect(result.code).toBe(1)
      // Refused before the run: nothing was started.
      expect(result.stdout).not.toContain('signalbox run · vault')
    }
  })

  it('run: forged decisions are rejected and audited by the agent; the right key’s approval runs the tool once', async () => {
    prefix = uniquePrefix()
    const subjects = createSubjects(prefix)
    const record = file(`run-${prefix}.log`)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'run-trust-test' })
    try {
      const seen = await observe(bus, subjects)
      const agent = startProcess(
        ['run', MODULE, '--scripted', '--trust', file('trust.json'), '--signing-key', file('agent.nk'), ...busArgs(prefix)],
        { name: 'run', env: { SBX_RECORD: record } },
      )
      await agent.waitFor(`signing as ${signers.agent.publicKey}`)
      await until(() => seen.requests.length > 0, 'the approval request')
      const request = seen.requests[0] as ApprovalRequestMessage
      // Signed by the agent's key.
      expect(request.signer).toBe(signers.agent.publicKey)

      const decision = decisionFor(request)
      await seen.decide(decision) // unsigned, naming tina
      await seen.decide(signers.mallory.sign(decision)) // a key nobody named
      await seen.decide(signers.bob.sign(decision)) // a known key, not allowed for this tool
      await seen.decide(signers.agent.sign(decision)) // the agent's own key
      await until(() => seen.rejected.length >= 4, 'four approval.rejected events')
      expect(seen.rejected.map((event) => event.reason.split(':')[0])).toEqual([
        'unsigned',
        'unknown-key',
        'key-not-allowed',
        'own-key',
      ])
      expect(existsSync(record)).toBe(false)
      expect(agent.output).not.toContain(FINAL)

      await seen.decide(signers.tina.sign({ ...decision, decidedAt: Date.now() }))
      expect(await agent.exited).toBe(0)
      expect(agent.stdout).toContain(FINAL)
      expect(await readFile(record, 'utf8')).toBe('opened 7\n')

      // The audit: written by the agent, signed with its key; the rejections once each, the approval under tina's name.
      const trail = await readAudit({ bus, subjects, filter: { agentId: 'vault' }, idleMs: 500 })
      expect(trail.filter((entry) => entry.kind === 'approval.rejected')).toHaveLength(4)
      expect(trail.filter((entry) => entry.kind === 'approval.granted')).toMatchObject([
        { actor: 'tina', signer: signers.agent.publicKey, evidence: { signer: signers.tina.publicKey } },
      ])
      expect(trail.every((entry) => entry.signer === signers.agent.publicKey)).toBe(true)
      const report = verifyAuditTrail(trail, {
        writers: [signers.agent.publicKey],
        policy: parseTrustPolicy(JSON.stringify(policy)),
      })
      expect(report.failures.filter((failure) => failure.entry.kind !== 'approval.rejected')).toEqual([])
      seen.close()
    } finally {
      await bus.close()
    }
  })

  it('host: an unsigned cancel is refused, a forged decision rejected; the right key’s approval runs the tool once', async () => {
    prefix = uniquePrefix()
    const subjects = createSubjects(prefix)
    const record = file(`host-${prefix}.log`)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'host-trust-test' })
    const system = createAgentSystem({ bus, subjects, hostId: 'test-client' })
    try {
      const seen = await observe(bus, subjects)
      const host = startProcess(
        [
          'host',
          MODULE,
          '--scripted',
          '--no-directory',
          '--trust',
          file('trust.json'),
          '--signing-key',
          file('agent.nk'),
          ...busArgs(prefix),
        ],
        { name: 'host', env: { SBX_RECORD: record } },
      )
      await host.waitFor('hosting 1 agent')
      expect(host.output).toContain(`signing as ${signers.agent.publicKey}`)
      const running = system.run('vault', 'Open vault 7')
      running.catch(() => {})
      await until(() => seen.requests.length > 0, 'the approval request')
      const request = seen.requests[0] as ApprovalRequestMessage
      expect(request.signer).toBe(signers.agent.publicKey)

      // Anyone on the bus: an unsigned cancel is refused, the run goes on.
      await expect(
        sendControl({ bus, subjects, agentId: 'vault', request: { type: 'control.cancel', runId: request.runId } }),
      ).rejects.toMatchObject({ code: 'CONTROL_NOT_AUTHORIZED' })
      const decision = decisionFor(request)
      await seen.decide(decision)
      await until(() => seen.rejected.length >= 1, 'the rejection')
      expect(seen.rejected[0]?.reason).toMatch(/^unsigned/)
      expect(existsSync(record)).toBe(false)

      await seen.decide(signers.tina.sign({ ...decision, decidedAt: Date.now() }))
      const result = await running
      expect(result.output).toBe(FINAL)
      expect(await readFile(record, 'utf8')).toBe('opened 7\n')
      const trail = await readAudit({ bus, subjects, filter: { agentId: 'vault' }, idleMs: 500 })
      expect(trail.filter((entry) => entry.kind === 'approval.rejected')).toMatchObject([{ signer: signers.agent.publicKey }])
      expect(trail.filter((entry) => entry.kind === 'approval.granted')).toMatchObject([
        { actor: 'tina', signer: signers.agent.publicKey },
      ])
      seen.close()
      expect(await host.stop('SIGTERM')).toBe(0)
    } finally {
      await system.close()
      await bus.close()
    }
  })
})
