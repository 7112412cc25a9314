/**
 * A durable run killed (SIGKILL) while a tool runs, resumed by a new process: the ledger says the
 * call started and never finished. A tool that is not idempotent is not run again and the model
 * reads that the outcome is unknown (audited); an idempotent one runs again, once.
 */
import { outcomeUnknownText } from '@signalbox/core/internal'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { clawChild, type DurableDir, durableDir } from './support.ts'

describe('durable runs: killed during a tool', { timeout: 120_000 }, () => {
  let dir: DurableDir | undefined
  let server: ScriptedModelServer | undefined
  afterEach(async () => {
    await server?.close()
    await dir?.remove()
  })

  it('does not run a non-idempotent tool again: the model is told the outcome is unknown, and the audit says so', async () => {
    dir = await durableDir()
    server = await startScriptedModelServer({
      scripts: {
        claw: [
          { toolCalls: [{ id: 'call_w', name: 'write_line', arguments: { text: 'pay 10' } }] },
          {
            content: 'I will check before paying again.',
            expect: (request) =>
              request.messages.some((m) => m.role === 'tool' && m.content === outcomeUnknownText('write_line')) ||
              'the model should read that the outcome is unknown',
          },
        ],
      },
    })
    const first = await clawChild(dir, server, 'start', 'run-c1', {
      hangIn: ['write_line'],
    })
    await first.next('tool.hanging')
    await first.child.kill()
    expect(dir.effectLines()).toEqual(['write_line pay 10'])

    const second = await clawChild(dir, server, 'resume', 'run-c1')
    const result = await second.next('result')
    expect(result, second.child.output()).toMatchObject({ status: 'done', output: 'I will check before paying again.' })
    await second.child.exited

    expect(dir.effectLines()).toEqual(['write_line pay 10']) // not run again
    const toolEnd = second.lines().find((l) => l.type === 'tool.end')
    expect(toolEnd).toMatchObject({ callId: 'call_w', outcome: 'outcome_unknown', output: outcomeUnknownText('write_line') })
    const audit = dir.auditEntries()
    expect(audit.map((e) => e.kind)).toEqual(['tool.outcome_unknown'])
    expect(audit[0]).toMatchObject({
      runId: 'run-c1',
      callId: 'call_w',
      toolName: 'write_line',
      shown: { text: 'pay 10' },
      decision: 'outcome_unknown',
      actor: 'system',
    })
    server.assertDone()
  })

  it('runs an idempotent tool again, once, and the model reads its result', async () => {
    dir = await durableDir()
    server = await startScriptedModelServer({
      scripts: {
        claw: [
          { toolCalls: [{ id: 'call_f', name: 'set_flag', arguments: { flag: 'lights-on' } }] },
          {
            content: 'Flag set.',
            expect: (request) =>
              request.messages.some((m) => m.role === 'tool' && m.content === 'set_flag did: set_flag lights-on') ||
              'the model should read the tool result',
          },
        ],
      },
    })
    const first = await clawChild(dir, server, 'start', 'run-c2', {
      hangIn: ['set_flag'],
    })
    await first.next('tool.hanging')
    await first.child.kill()

    const second = await clawChild(dir, server, 'resume', 'run-c2')
    const result = await second.next('result')
    expect(result.status).toBe('done')
    expect(result.output).toBe('Flag set.')
    await second.child.exited

    // Once before the crash, once on resume: never more.
    expect(dir.effectLines()).toEqual(['set_flag lights-on', 'set_flag lights-on'])
    expect(second.lines().find((l) => l.type === 'tool.end')).toMatchObject({ callId: 'call_f', outcome: 'executed' })
    // The tool is told it runs again (it may re-attach to what it started), in the same turn.
    expect(first.lines().find((l) => l.type === 'tool.context')).toMatchObject({ rerun: false, turn: 1 })
    expect(second.lines().find((l) => l.type === 'tool.context')).toMatchObject({ rerun: true, turn: 1 })
    expect(dir.auditEntries()).toEqual([])
    server.assertDone()
  })
})
