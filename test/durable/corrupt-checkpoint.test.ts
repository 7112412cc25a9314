/**
 * Stored runs that cannot be read (a truncated checkpoint, one from an unknown schema version)
 * are reported with a clear error naming the run; the other runs still resume and finish.
 */
import { type RecordedRequest, type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { cutInsideFirstCheckpoint, rewriteLatestCheckpoint } from '../support/run-log-files.ts'
import { type DurableDir, durableDir, startDurableChild } from './support.ts'

describe('durable runs: unreadable checkpoints', { timeout: 120_000 }, () => {
  let dir: DurableDir | undefined
  let server: ScriptedModelServer | undefined
  afterEach(async () => {
    await server?.close()
    await dir?.remove()
  })

  it('resumeAll names each unreadable run with its code and resumes the others', async () => {
    dir = await durableDir()
    const respond = (request: RecordedRequest) =>
      request.messages.some((m) => m.role === 'tool')
        ? { content: 'Dropped.' }
        : { toolCalls: [{ name: 'drop_claw', arguments: { prize: 'duck' } }] }
    server = await startScriptedModelServer({ scripts: { claw: respond } })
    const runIds = ['run-ok', 'run-truncated', 'run-future']
    const first = await startDurableChild(dir, { modelUrl: server.url, model: 'claw', mode: 'start', runIds, reviewer: 'never' })
    for (const runId of runIds) await first.next('approval.requested', (l) => (l.request as { runId: string }).runId === runId)
    await first.child.kill()

    // A log left with no whole checkpoint (a cut its writer never acknowledged is skipped, not
    // reported: see file-run-store.test.ts), and a checkpoint written by a newer signalbox.
    cutInsideFirstCheckpoint(dir.storeDir, 'run-truncated')
    rewriteLatestCheckpoint(dir.storeDir, 'run-future', (json) => JSON.stringify({ ...JSON.parse(json), v: 99 }))

    const second = await startDurableChild(dir, {
      modelUrl: server.url,
      model: 'claw',
      mode: 'resumeAll',
      runIds: [],
      reviewer: 'approve',
      reviewerName: 'alice',
    })
    const started = await second.next('started')
    expect(started.runIds).toEqual(['run-ok'])
    const errors = second.lines().filter((l) => l.type === 'resume.error')
    expect(errors.map((e) => [e.runId, e.code]).sort()).toEqual([
      ['run-future', 'CHECKPOINT_UNSUPPORTED_VERSION'],
      ['run-truncated', 'CHECKPOINT_TRUNCATED'],
    ])
    for (const error of errors) expect(error.message).toContain(`Run "${error.runId}"`)

    const result = await second.next('result')
    expect(result).toMatchObject({ runId: 'run-ok', status: 'done', output: 'Dropped.' })
    await second.child.exited
    expect(dir.effectLines()).toEqual(['drop_claw duck'])
    expect(dir.auditEntries().map((e) => [e.runId, e.kind, e.actor])).toEqual([['run-ok', 'approval.granted', 'alice']])
  })
})
