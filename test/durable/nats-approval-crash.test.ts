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
import { type DurableDir, durableDir, startDurableChild } from './support.ts'

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
      scripts: {
        claw: [
          { toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { prize: 'duck' } }] },
          {
            content: 'Dropped.',
            expect: (request) =>
              request.messages.some((m) => m.role === 'tool' && m.content === 'drop_claw did: drop_claw duck') ||
              'the model should read the tool result',
          },
        ],
      },
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
    const first = await startDurableChild(dir, {
      modelUrl: server.url,
      model: 'claw',
      mode: 'start',
      runIds: ['run-n1'],
      reviewer: 'never',
      nats,
    })
    const asked = await onScreen
    await first.child.kill()
    // The agent is down: the reviewer approves.
    approve()
    await decidedOnce
    expect(decided[0]).toMatchObject({ requestId: asked.requestId, approved: true, reviewer: 'alice' })
    expect(dir.effectLines()).toEqual([])

    const second = await startDurableChild(dir, {
      modelUrl: server.url,
      model: 'claw',
      mode: 'resume',
      runIds: ['run-n1'],
      reviewer: 'never',
      nats,
    })
    const result = await second.next('result')
    expect(result).toMatchObject({ status: 'done', output: 'Dropped.' })
    await second.child.exited

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
      scripts: {
        claw: [
          { toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { prize: 'seal' } }] },
          {
            content: 'Dropped.',
            expect: (request) =>
              request.messages.some((m) => m.role === 'tool' && m.content === 'drop_claw did: drop_claw seal') ||
              'the model should read the tool result',
          },
        ],
      },
    })
    bus = await connectNatsBus({ servers: NATS_URL, name: 'reviewer', prefix, durable: { storage: 'memory' } })
    const nats = { url: NATS_URL, prefix }
    const first = await startDurableChild(dir, {
      modelUrl: server.url,
      model: 'claw',
      mode: 'start',
      runIds: ['run-n3'],
      reviewer: 'never',
      nats,
      approvalTimeoutMs: 5_000, // room to kill and decide before it passes, on a loaded machine
    })
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
    while (Date.now() <= asked.deadline + 100) await new Promise((resolve) => setTimeout(resolve, 50))

    const second = await startDurableChild(dir, {
      modelUrl: server.url,
      model: 'claw',
      mode: 'resume',
      runIds: ['run-n3'],
      reviewer: 'never',
      nats,
    })
    const result = await second.next('result')
    expect(result).toMatchObject({ status: 'done', output: 'Dropped.' })
    await second.child.exited

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
      scripts: {
        claw: [
          { toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { prize: 'orca' } }] },
          {
            content: 'Nobody approved in time.',
            expect: (request) =>
              request.messages.some(
                (m) => m.role === 'tool' && typeof m.content === 'string' && m.content.includes('denied by default'),
              ) || 'the model should be told the call timed out',
          },
        ],
      },
    })
    bus = await connectNatsBus({ servers: NATS_URL, name: 'reviewer', prefix, durable: { storage: 'memory' } })
    const nats = { url: NATS_URL, prefix }
    const first = await startDurableChild(dir, {
      modelUrl: server.url,
      model: 'claw',
      mode: 'start',
      runIds: ['run-n4'],
      reviewer: 'never',
      nats,
      approvalTimeoutMs: 3_000,
    })
    const asked = (await first.next('approval.requested')).request as ApprovalRequest
    await first.child.kill()
    while (Date.now() <= asked.deadline + 100) await new Promise((resolve) => setTimeout(resolve, 50))
    // Too late, backdated to look in time: the stream's own timestamp says otherwise.
    const backdated = decideApproval(asked, true, 'mallory', asked.requestedAt + 1)
    await bus.durablePublish(
      createSubjects(prefix).approvalDecisions('claw'),
      encodeMessage({ v: PROTOCOL_VERSION, type: 'approval.decision', ...backdated }),
      { msgId: `decision-${asked.requestId}` },
    )

    const second = await startDurableChild(dir, {
      modelUrl: server.url,
      model: 'claw',
      mode: 'resume',
      runIds: ['run-n4'],
      reviewer: 'never',
      nats,
    })
    const result = await second.next('result')
    expect(result).toMatchObject({ status: 'done', output: 'Nobody approved in time.' })
    await second.child.exited

    expect(dir.effectLines()).toEqual([])
    const audit = dir.auditEntries()
    expect(audit.map((e) => [e.kind, e.actor, e.decision])).toEqual([['approval.timeout', 'system', 'timeout']])
    server.assertDone()
  })

  it('a correction published while the agent is down is applied after resume: the pending call is cancelled', async () => {
    dir = await durableDir()
    const prefix = uniquePrefix()
    server = await startScriptedModelServer({
      scripts: {
        claw: [
          { toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { prize: 'whale' } }] },
          {
            content: 'Understood, no whale.',
            expect: (request) =>
              request.messages.some(
                (m) => m.role === 'tool' && m.content === 'Cancelled. The person says: not the whale, the duck',
              ) || 'the model should read the correction',
          },
        ],
      },
    })
    const nats = { url: NATS_URL, prefix }
    const first = await startDurableChild(dir, {
      modelUrl: server.url,
      model: 'claw',
      mode: 'start',
      runIds: ['run-n2'],
      reviewer: 'never',
      nats,
    })
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

    const second = await startDurableChild(dir, {
      modelUrl: server.url,
      model: 'claw',
      mode: 'resume',
      runIds: ['run-n2'],
      reviewer: 'never',
      nats,
    })
    const result = await second.next('result')
    expect(result).toMatchObject({ status: 'done', output: 'Understood, no whale.' })
    await second.child.exited

    expect(dir.effectLines()).toEqual([])
    const audit = dir.auditEntries()
    expect(audit.map((e) => [e.kind, e.actor, e.decision])).toEqual([
      ['steering.applied', 'operator-olga', 'not the whale, the duck'],
    ])
    server.assertDone()
  })
})
