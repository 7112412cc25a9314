/**
 * `signalbox review` as a trusted reviewer, over real NATS: with `--nkey` it signs its decisions,
 * with `--agent-key` it shows only requests the agent signed (marked verified), and even with
 * `--auto approve` it refuses (denies, saying why) a request whose digest does not match its
 * arguments, and a request with arguments nested 100,000 deep, once, instead of looping.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { createSubjects } from '@signalbox/core/bus'
import { ApprovalDecisionMessage, type ApprovalRequestMessage, callDigest, decodeMessage } from '@signalbox/core/protocol'
import { afterEach, describe, expect, it } from 'vitest'
import { connectNatsBus } from '../../packages/actors/src/nats/index.ts'
import { createSigner, createTrustPolicy, newUserSeed } from '../../packages/actors/src/trust/index.ts'
import { uniquePrefix } from '../support/env.ts'
import { busArgs, cleanupAll, deleteStream, NATS_URL, startProcess, until } from './support.ts'

let prefix = ''
let tmp: string | undefined
afterEach(async () => {
  await cleanupAll()
  if (prefix) await deleteStream(prefix)
  if (tmp) await rm(tmp, { recursive: true, force: true })
})

describe('signalbox review with keys', () => {
  it('signs decisions, shows only signed requests, and refuses a mismatched digest and deep arguments once', async () => {
    prefix = uniquePrefix()
    tmp = await mkdtemp(path.join(os.tmpdir(), 'signalbox-review-trust-'))
    const reviewerSeed = newUserSeed()
    const reviewerKey = createSigner(reviewerSeed)
    const agentKey = createSigner(newUserSeed())
    const seedFile = path.join(tmp, 'tina.nk')
    await writeFile(seedFile, reviewerSeed)
    const subjects = createSubjects(prefix)
    const bus = await connectNatsBus({ servers: NATS_URL, prefix })
    try {
      const decisions: ApprovalDecisionMessage[] = []
      const watch = bus.durableConsume(subjects.approvalDecisions('claw'), (message) => {
        message.ack()
        const decoded = decodeMessage(message.data, ApprovalDecisionMessage)
        if (decoded.ok) decisions.push(decoded.value)
      })
      await watch.ready

      const reviewer = startProcess(
        [
          'review',
          '--auto',
          'approve',
          '--name',
          'tina',
          '--nkey',
          seedFile,
          '--agent-key',
          agentKey.publicKey,
          ...busArgs(prefix),
        ],
        { name: 'review' },
      )
      await reviewer.waitFor('reviewing approval requests')

      const now = Date.now()
      const request = (n: number, args: unknown): ApprovalRequestMessage => ({
        v: 1,
        type: 'approval.request',
        requestId: `request_${n}`,
        agentId: 'claw',
        runId: 'run_1',
        runPath: [],
        callId: `call_${n}`,
        toolName: 'drop_claw',
        arguments: args,
        digest: callDigest('drop_claw', args),
        deadline: now + 60_000,
        requestedAt: now,
      })
      const send = (message: ApprovalRequestMessage | string, id: string) =>
        bus.durablePublish(subjects.approvals('claw'), typeof message === 'string' ? message : JSON.stringify(message), {
          msgId: id,
        })

      // 1. The digest is of other arguments than those shown.
      await send(agentKey.sign({ ...request(1, { bin: 3 }), digest: callDigest('drop_claw', { bin: 4 }) }), 'r1')
      // 2. Arguments nested 100,000 deep (written by hand: JSON.stringify would overflow the stack here).
      const deep = agentKey.sign({ ...request(2, null), digest: callDigest('drop_claw', { deep: true }) })
      const depth = 100_000
      await send(JSON.stringify(deep).replace('"arguments":null', `"arguments":${'['.repeat(depth)}${']'.repeat(depth)}`), 'r2')
      // 3. Not signed by the agent: never shown, never decided.
      await send(request(3, { bin: 1 }), 'r3')
      // 4. A real request.
      await send(agentKey.sign(request(4, { bin: 2 })), 'r4')

      await until(() => decisions.some((d) => d.requestId === 'request_4'), 15_000, 'the decision on the real request')
      await until(() => decisions.some((d) => d.requestId === 'request_1'), 15_000, 'the refusal of the mismatched digest')
      // Long enough for a retried refusal (the service retries failures after 1 s) to show up.
      await new Promise((resolve) => setTimeout(resolve, 2_500))

      const byRequest = (id: string) => decisions.filter((d) => d.requestId === id)
      expect(byRequest('request_4')).toMatchObject([{ approved: true, reviewer: 'tina', signer: reviewerKey.publicKey }])
      expect(byRequest('request_1')).toMatchObject([{ approved: false }])
      expect(byRequest('request_1')[0]?.reason).toContain('the digest does not match the arguments shown')
      // Nested past the protocol's depth limit: the wire decoder drops it once (docs/protocol.md), so
      // it never reaches the person and nothing is decided on it.
      expect(byRequest('request_2')).toEqual([])
      expect(byRequest('request_3')).toEqual([])
      // Every decision is signed by the reviewer's key and verifies.
      const policy = createTrustPolicy({ keys: { [reviewerKey.publicKey]: 'tina' }, reviewers: [reviewerKey.publicKey] })
      for (const decision of decisions) expect(policy.check(decision, { toolName: 'drop_claw' })).toMatchObject({ ok: true })
      // Shown as verified; the unsigned request and the refusals are said once each, not looped.
      expect(reviewer.stdout).toContain(`verified: signed by agent key 1 (${agentKey.publicKey})`)
      expect(reviewer.stdout).not.toContain('"bin": 1')
      expect(reviewer.stderr.match(/refused drop_claw \(call_2/g)).toBeNull()
      expect(reviewer.stderr.match(/refused drop_claw \(call_3/g)).toHaveLength(1)
      expect(reviewer.stderr).not.toContain('Maximum call stack size exceeded\n'.repeat(2))
      expect(await reviewer.stop('SIGTERM')).toBe(0)
    } finally {
      await bus.close()
    }
  }, 60_000)
})
