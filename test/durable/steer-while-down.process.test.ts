/**
 * `signalbox steer` while no process of the agent runs (the shared NATS server, a private prefix):
 * the command says what will happen to the correction, and a stored run resumed afterwards does
 * exactly that. Aimed at the run (--run), the resumed run applies it; aimed at the agent (every
 * run), the resumed run applies it too: it was sent after the run began, so it was meant for it.
 */
import type { ScriptedModelServer } from '@signalbox/core/testing'
import { startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { busArgs, cleanupAll, deleteStream, runCli, startProcess } from '../cli/support.ts'
import { uniquePrefix } from '../support/env.ts'
import { clawChild, type DurableDir, durableDir, readsTool, resumeToEnd } from './support.ts'

const CORRECTION = 'not the whale, the duck'

describe('signalbox steer while the agent is down', { timeout: 120_000 }, () => {
  let dir: DurableDir | undefined
  let server: ScriptedModelServer | undefined
  let prefix: string | undefined
  afterEach(async () => {
    await cleanupAll()
    await server?.close()
    await dir?.remove()
    if (prefix) await deleteStream(prefix)
  })

  /** A stored claw run parked on its approval, and its process killed. */
  async function parkedRun(
    answer: string,
    reads: (content: string) => boolean,
    before?: (nats: { url: string; prefix: string }) => Promise<void>,
  ) {
    dir = await durableDir()
    prefix = uniquePrefix()
    server = await startScriptedModelServer({
      scripts: {
        claw: [
          { toolCalls: [{ id: 'call_drop', name: 'drop_claw', arguments: { prize: 'whale' } }] },
          { content: answer, ...readsTool(reads, 'the model read something else') },
        ],
      },
    })
    const nats = { url: busArgs(prefix)[1] as string, prefix }
    await before?.(nats)
    const first = await clawChild(dir, server, 'start', 'run-s1', { nats })
    await first.next('approval.requested')
    await first.child.kill()
    return { dir, server, nats }
  }

  it('--run: the command says the stored run applies it when resumed, and the resumed run does', async () => {
    const parked = await parkedRun('Understood, no whale.', (c) => c === `Cancelled. The person says: ${CORRECTION}`)
    const steered = await runCli(['steer', 'claw', CORRECTION, '--run', 'run-s1', '--as', 'olga', ...busArgs(parked.nats.prefix)])
    expect(steered.code, steered.output).toBe(0)
    expect(steered.stdout).not.toContain('✔')
    expect(steered.stdout).toContain(`queued (durably) "${CORRECTION}" from olga for run run-s1 of claw`)
    expect(steered.stderr).toContain('no process of agent "claw" is on the bus right now: nothing applies it now.')
    expect(steered.stderr).toContain(
      'If run run-s1 is kept in a run store, it applies the correction when a process started from now on resumes it.',
    )

    const { result } = await resumeToEnd(parked.dir, parked.server, 'run-s1', { nats: parked.nats })
    expect(result).toMatchObject({ status: 'done', output: 'Understood, no whale.' })
    expect(parked.dir.effectLines()).toEqual([])
    expect(parked.dir.auditEntries().map((e) => [e.kind, e.actor, e.decision])).toEqual([
      ['steering.applied', 'olga', CORRECTION],
    ])
  })

  it('without --run: the command says stored runs apply it when resumed, and the resumed run does', async () => {
    const parked = await parkedRun('Understood, no whale.', (c) => c === `Cancelled. The person says: ${CORRECTION}`)
    const steered = await runCli(['steer', 'claw', CORRECTION, '--as', 'olga', '--json', ...busArgs(parked.nats.prefix)])
    expect(steered.code, steered.output).toBe(0)
    expect(JSON.parse(steered.stdout)).toMatchObject({
      text: CORRECTION,
      from: 'olga',
      agentOnline: false,
      appliedBy: 'nobody-now',
    })
    expect(steered.stderr).toContain(
      'Its runs kept in a run store apply it when a process started from now on resumes them (signalbox runs lists them); runs started later do not read it.',
    )

    const { result } = await resumeToEnd(parked.dir, parked.server, 'run-s1', { nats: parked.nats })
    expect(result).toMatchObject({ status: 'done', output: 'Understood, no whale.' })
    expect(parked.dir.effectLines()).toEqual([])
    expect(parked.dir.auditEntries().map((e) => [e.kind, e.actor, e.decision])).toEqual([
      ['steering.applied', 'olga', CORRECTION],
    ])
  })

  it('a correction for every run sent before the run began is not applied when it resumes (it was not meant for it)', async () => {
    const parked = await parkedRun(
      'Dropped.',
      (c) => c === 'drop_claw did: drop_claw whale',
      async (nats) => {
        const early = await runCli(['steer', 'claw', 'an old correction', '--as', 'olga', ...busArgs(nats.prefix)])
        expect(early.code, early.output).toBe(0)
      },
    )
    const reviewer = startProcess([
      'review',
      '--auto',
      'approve',
      '--as',
      'rita',
      '--agent',
      'claw',
      ...busArgs(parked.nats.prefix),
    ])
    await reviewer.waitFor('reviewing approval requests')
    const { result } = await resumeToEnd(parked.dir, parked.server, 'run-s1', { nats: parked.nats })
    expect(result).toMatchObject({ status: 'done', output: 'Dropped.' })
    expect(parked.dir.effectLines()).toEqual(['drop_claw whale'])
    expect(parked.dir.auditEntries().map((e) => e.kind)).not.toContain('steering.applied')
  })
})
