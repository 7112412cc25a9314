/**
 * A durable run killed (SIGKILL) while it waits for a person, resumed by a new process: the same
 * request is answered, the tool runs exactly once, and the audit says who decided. When the
 * deadline passed while no process was running, the call is denied as a timeout by `system`.
 */
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { clawChild, type DurableDir, durableDir } from './support.ts'

describe('durable runs: killed while awaiting approval', { timeout: 120_000 }, () => {
  let dir: DurableDir | undefined
  let server: ScriptedModelServer | undefined
  afterEach(async () => {
    await server?.close()
    await dir?.remove()
  })

  it('resumes the same request; the decision given at resume runs the tool exactly once and is audited', async () => {
    dir = await durableDir()
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
    const first = await clawChild(dir, server, 'start', 'run-a')
    const asked = (await first.next('approval.requested')).request as { requestId: string; callId: string; digest: string }
    await first.child.kill()
    expect(dir.effectLines()).toEqual([])

    const second = await clawChild(dir, server, 'resume', 'run-a', {
      reviewer: 'approve',
      reviewerName: 'alice',
    })
    const reasked = (await second.next('approval.requested')).request as typeof asked
    expect(reasked).toEqual(asked) // the SAME request: ids, digest, deadline
    const result = await second.next('result')
    expect(result.status).toBe('done')
    expect(result.output).toBe('Dropped.')
    await second.child.exited

    expect(dir.effectLines()).toEqual(['drop_claw duck'])
    const audit = dir.auditEntries()
    expect(audit.map((e) => e.kind)).toEqual(['approval.granted'])
    expect(audit[0]).toMatchObject({
      runId: 'run-a',
      callId: asked.callId,
      digest: asked.digest,
      toolName: 'drop_claw',
      shown: { prize: 'duck' },
      decision: 'approved',
      actor: 'alice',
    })
    server.assertDone()
  })

  it('denies as a timeout by system when the deadline passed while no process ran; the tool never runs', async () => {
    dir = await durableDir()
    server = await startScriptedModelServer({
      scripts: {
        claw: [
          { toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { prize: 'whale' } }] },
          {
            content: 'Nobody approved.',
            expect: (request) =>
              request.messages.some(
                (m) => m.role === 'tool' && typeof m.content === 'string' && m.content.includes('denied by default'),
              ) || 'the model should be told the call timed out',
          },
        ],
      },
    })
    const first = await clawChild(dir, server, 'start', 'run-b', {
      approvalTimeoutMs: 5_000, // long enough to be parked (stored) before it passes, on a loaded machine
    })
    const asked = (await first.next('approval.requested')).request as { deadline: number }
    await first.child.kill()
    // Let the deadline pass while no process runs the agent.
    while (Date.now() <= asked.deadline + 50) await new Promise((resolve) => setTimeout(resolve, 50))

    // This reviewer would approve: it must not be asked, the deadline has passed.
    const second = await clawChild(dir, server, 'resume', 'run-b', {
      reviewer: 'approve',
      reviewerName: 'late-larry',
    })
    const result = await second.next('result')
    expect(result.status).toBe('done')
    expect(result.output).toBe('Nobody approved.')
    await second.child.exited
    expect(second.lines().filter((l) => l.type === 'approval.requested')).toEqual([])

    expect(dir.effectLines()).toEqual([])
    const audit = dir.auditEntries()
    expect(audit.map((e) => e.kind)).toEqual(['approval.timeout'])
    expect(audit[0]).toMatchObject({ runId: 'run-b', toolName: 'drop_claw', decision: 'timeout', actor: 'system' })
    const toolEnd = second.lines().find((l) => l.type === 'tool.end')
    expect(toolEnd?.outcome).toBe('approval_timeout')
    server.assertDone()
  })
})
