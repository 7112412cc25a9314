/**
 * Over NATS (the real server at 127.0.0.1:4222): a durable agent killed (SIGKILL) while its run
 * waits for approval. While no agent process runs, a reviewer approves (or someone steers the
 * run); a new process resumes the run and applies what happened while it was down, once.
 */
import { serveReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { type ApprovalDecision, type ApprovalRequest, decideApproval } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { encodeMessage, PROTOCOL_VERSION, type SteerMessage } from '@signalbox/core/protocol'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { clawChild, type DurableDir, durableDir, readsTool, resumeToEnd, untilPast } from './support.ts'

/** The claw's script: drop `prize`, then answer `answer` once the model reads what `reads` accepts. */
function dropScript(prize: string, answer: string, reads: (content: string) => boolean, why: string) {
  return {
    claw: [
      { toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { prize } }] },
      { content: answer, ...readsTool(reads, why) },
    ],
  }
}

describe('durable runs over NATS: killed while awaiting approval', { timeout: 120_000 }, () => {
  let dir: DurableDir | undefined
  let server: ScriptedModelServer | undefined
  let bus: NatsBus | undefined
  const cleanups: (() => unknown)[] = []
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
    await bus?.close()
    await server?.close()
    await dir?.remove()
  })

  it('a reviewer approves while the agent is down; the resumed run applies it once and the tool runs once', async () => {
    dir = await durableDir()
    const prefix = uniquePrefix()
    server = await startScriptedModelServer({
      scripts: dropScript(
        'duck',
        'Dropped.',
        (c) => c === 'drop_claw did: drop_claw duck',
        'the model should read the tool result',
      ),
    })
    // A reviewer is on duty: it gets the stored request and keeps it on screen until the agent is dead.
    bus = await connectNatsBus({ servers: NATS_URL, name: 'reviewer', prefix, durable: { storage: 'memory' } })
    let shown: (request: ApprovalRequest) => void = () => {}
    const onScreen = new Promise<ApprovalRequest>((resolve) => {
      shown = resolve
    })
    let approve: () => void = () => {}
    const agentDown = new Promise<void>((resolve) => {
      approve = resolve
    })
    const decided: ApprovalDecision[] = []
    let onDecided: () => void = () => {}
    const decidedOnce = new Promise<void>((resolve) => {
      onDecided = resolve
    })
    const service = serveReviewer({
      bus,
      subjects: createSubjects(prefix),
      reviewer: {
        review: async (request) => {
          shown(request)
          await agentDown
          return decideApproval(request, true, 'alice', Date.now())
        },
      },
      onDecision: (_request, decision) => {
        decided.push(decision)
        onDecided()
      },
    })
    cleanups.push(() => service.close())
    await service.ready

    const nats = { url: NATS_URL, prefix }
    const first = await clawChild(dir, server, 'start', 'run-n1', { nats })
    const asked = await onScreen
    await first.child.kill()
    // The agent is down: the reviewer approves.
    approve()
    await decidedOnce
    expect(decided[0]).toMatchObject({ requestId: asked.requestId, approved: true, reviewer: 'alice' })
    expect(dir.effectLines()).toEqual([])

    const { result } = await resumeToEnd(dir, server, 'run-n1', { nats })
    expect(result).toMatchObject({ status: 'done', output: 'Dropped.' })

    expect(dir.effectLines()).toEqual(['drop_claw duck'])
    const audit = dir.auditEntries()
    expect(audit.map((e) => e.kind)).toEqual(['approval.granted'])
    expect(audit[0]).toMatchObject({
      runId: 'run-n1',
      callId: asked.callId,
      digest: asked.digest,
      shown: { prize: 'duck' },
      decision: 'approved',
      actor: 'alice',
    })
    expect(decided).toHaveLength(1)
    server.assertDone()
  })

  it('a decision stored in time while the agent is down, found only after the deadline, is applied once', async () => {
    dir = await durableDir()
    const prefix = uniquePrefix()
    server = await startScriptedModelServer({
      scripts: dropScript(
        'seal',
        'Dropped.',
        (c) => c === 'drop_claw did: drop_claw seal',
        'the model should read the tool result',
      ),
    })
    bus = await connectNatsBus({ servers: NATS_URL, name: 'reviewer', prefix, durable: { storage: 'memory' } })
    const nats = { url: NATS_URL, prefix }
    // Room to kill and decide before the deadline, on a loaded machine.
    const first = await clawChild(dir, server, 'start', 'run-n3', { nats, approvalTimeoutMs: 5_000 })
    const asked = (await first.next('approval.requested')).request as ApprovalRequest
    await first.child.kill()
    // In time, while no agent process runs: the stream stores it before the deadline.
    const decision = decideApproval(asked, true, 'alice', Date.now())
    const stored = await bus.durablePublish(
      createSubjects(prefix).approvalDecisions('claw'),
      encodeMessage({ v: PROTOCOL_VERSION, type: 'approval.decision', ...decision }),
      { msgId: `decision-${asked.requestId}` },
    )
    expect(stored.duplicate).toBe(false)
    expect(Date.now()).toBeLessThan(asked.deadline) // else this run proves nothing: the machine was too slow
    // The deadline passes while the agent is still down.
    await untilPast(asked.deadline)

    const { result } = await resumeToEnd(dir, server, 'run-n3', { nats })
    expect(result).toMatchObject({ status: 'done', output: 'Dropped.' })

    expect(dir.effectLines()).toEqual(['drop_claw seal'])
    const audit = dir.auditEntries()
    expect(audit.map((e) => [e.kind, e.actor])).toEqual([['approval.granted', 'alice']])
    expect(audit[0]).toMatchObject({ runId: 'run-n3', callId: asked.callId, digest: asked.digest, decision: 'approved' })
    server.assertDone()
  })

  it('a decision stored after the deadline does not count, even when it claims an earlier time: timeout by system', async () => {
    dir = await durableDir()
    const prefix = uniquePrefix()
    server = await startScriptedModelServer({
      scripts: dropScript(
        'orca',
        'Nobody approved in time.',
        (c) => c.includes('denied by default'),
        'the model should be told the call timed out',
      ),
    })
    bus = await connectNatsBus({ servers: NATS_URL, name: 'reviewer', prefix, durable: { storage: 'memory' } })
    const nats = { url: NATS_URL, prefix }
    const first = await clawChild(dir, server, 'start', 'run-n4', { nats, approvalTimeoutMs: 3_000 })
    const asked = (await first.next('approval.requested')).request as ApprovalRequest
    await first.child.kill()
    await untilPast(asked.deadline)
    // Too late, backdated to look in time: the stream's own timestamp says otherwise.
    const backdated = decideApproval(asked, true, 'mallory', asked.requestedAt + 1)
    await bus.durablePublish(
      createSubjects(prefix).approvalDecisions('claw'),
      encodeMessage({ v: PROTOCOL_VERSION, type: 'approval.decision', ...backdated }),
      { msgId: `decision-${asked.requestId}` },
    )

    const { result } = await resumeToEnd(dir, server, 'run-n4', { nats })
    expect(result).toMatchObject({ status: 'done', output: 'Nobody approved in time.' })

    expect(dir.effectLines()).toEqual([])
    const audit = dir.auditEntries()
    expect(audit.map((e) => [e.kind, e.actor, e.decision])).toEqual([['approval.timeout', 'system', 'timeout']])
    server.assertDone()
  })

  it('a correction published while the agent is down is applied after resume: the pending call is cancelled', async () => {
    dir = await durableDir()
    const prefix = uniquePrefix()
    server = await startScriptedModelServer({
      scripts: dropScript(
        'whale',
        'Understood, no whale.',
        (c) => c === 'Cancelled. The person says: not the whale, the duck',
        'the model should read the correction',
      ),
    })
    const nats = { url: NATS_URL, prefix }
    const first = await clawChild(dir, server, 'start', 'run-n2', { nats })
    await first.next('approval.requested')
    await first.child.kill()

    bus = await connectNatsBus({ servers: NATS_URL, name: 'operator', prefix, durable: { storage: 'memory' } })
    const steer: SteerMessage = {
      v: PROTOCOL_VERSION,
      type: 'steer',
      steerId: 'steer-1',
      text: 'not the whale, the duck',
      from: 'operator-olga',
      runId: 'run-n2',
      sentAt: Date.now(),
    }
    await bus.durablePublish(createSubjects(prefix).steer('claw'), encodeMessage(steer), { msgId: steer.steerId })

    const { result } = await resumeToEnd(dir, server, 'run-n2', { nats })
    expect(result).toMatchObject({ status: 'done', output: 'Understood, no whale.' })

    expect(dir.effectLines()).toEqual([])
    const audit = dir.auditEntries()
    expect(audit.map((e) => [e.kind, e.actor, e.decision])).toEqual([
      ['steering.applied', 'operator-olga', 'not the whale, the duck'],
    ])
    server.assertDone()
  })
})
