/**
 * The commands end to end, each a real `signalbox` child process on the shared NATS server (a
 * private prefix per test): a tool host, an agent run over NATS, an unattended reviewer, two
 * watchers and the audit; then steer, status and cancel against a running agent; then embedded runs.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { uniquePrefix } from '../support/env.ts'
import { STEER_TEXT } from './fixtures/gate-agent.ts'
import { FINAL } from './fixtures/payments-agent.ts'
import { busArgs, cleanupAll, deleteStream, runCli, startProcess } from './support.ts'

let prefix: string
let tmp: string | undefined

beforeEach(() => {
  prefix = uniquePrefix()
})

afterEach(async () => {
  await cleanupAll()
  await deleteStream(prefix)
  if (tmp) await rm(tmp, { recursive: true, force: true })
  tmp = undefined
})

/** The lines of `output` that contain `text`. */
const linesWith = (output: string, text: string) => output.split('\n').filter((line) => line.includes(text))

describe('signalbox over NATS', () => {
  it('tools serve + review --auto + run --nats + watch + audit: a remote approval, end to end', async () => {
    const bus = busArgs(prefix)
    const tools = startProcess(['tools', 'serve', 'test/cli/fixtures/payments-tools.ts', ...bus], { name: 'tools' })
    const reviewer = startProcess(['review', '--auto', 'approve', '--answer', '42 euros', '--name', 'robot-reviewer', ...bus], {
      name: 'review',
    })
    const watcher = startProcess(['watch', ...bus], { name: 'watch' })
    await Promise.all([
      tools.waitFor('serving 2 tools: lookup_account, send_payment (needs approval)'),
      reviewer.waitFor('reviewing approval requests'),
      watcher.waitFor('watching every agent'),
    ])

    const run = await runCli(['run', 'test/cli/fixtures/payments-agent.ts', '--scripted', ...bus])
    expect(run.code, run.output).toBe(0)
    // The run's trace: remote tools, the question answered and the approval decided over the bus.
    expect(run.stdout).toContain('tools  lookup_account (remote), send_payment (remote, needs approval), ask_human')
    expect(run.stdout).toMatch(/question\.answered\s+"42 euros" by robot-reviewer/)
    expect(run.stdout).toMatch(/approval\.requested send_payment\(\{"to":"alice","amount":42\}\)/)
    expect(run.stdout).toMatch(/approval\.decided\s+send_payment approved by robot-reviewer/)
    expect(run.stdout).toMatch(/state\s+running\.turn\.toolCalls\.awaitingApproval/)
    expect(run.stdout).toContain(`Final answer\n  ${FINAL}`)

    // The tool host printed each call, and ran the approved one.
    await tools.waitFor('← ok     send_payment')
    expect(linesWith(tools.stdout, '→ call').map((l) => l.split(/\s+/)[3])).toEqual(['lookup_account', 'send_payment'])
    // The reviewer showed the exact call and its decision.
    expect(reviewer.stdout).toContain('"to": "alice"')
    expect(reviewer.stdout).toMatch(/✔ approved send_payment .* by robot-reviewer/)

    // watch: one line per event; the streamed text deltas coalesced into one line.
    await watcher.waitFor('run.end')
    const lines = watcher.stdout.split('\n')
    expect(lines.some((l) => /payer run_[0-9a-f]{8} run\.start\s+"Pay alice"/.test(l))).toBe(true)
    expect(lines.some((l) => /tool\.start\s+send_payment\(\{"to":"alice","amount":42\}\)/.test(l))).toBe(true)
    expect(lines.some((l) => /approval\.decided\s+send_payment approved by robot-reviewer/.test(l))).toBe(true)
    const textLines = lines.filter((l) => / text\s+"/.test(l))
    expect(textLines).toHaveLength(1)
    expect(textLines[0]).toContain(JSON.stringify(FINAL))
    // audit: one row per decision (JSON and filters: packages/cli/test/commands.test.ts).
    const table = await runCli(['audit', ...bus])
    expect(table.code, table.output).toBe(0)
    expect(table.stdout).toMatch(/^TIME\s+AGENT\s+RUN\s+TOOL\s+KIND\s+ACTOR\s+DECISION\s+REASON\s+LATENCY$/m)
    expect(table.stdout).toMatch(/payer\s+run_[0-9a-f]{8}\s+ask_human\s+question\.answered\s+robot-reviewer\s+42 euros\s+\d+ ms/)
    expect(table.stdout).toMatch(
      /payer\s+run_[0-9a-f]{8}\s+send_payment\s+approval\.granted\s+robot-reviewer\s+approved\s+\d+ ms/,
    )
    expect(table.stdout).toContain('2 entries')

    // Graceful stops.
    expect(await tools.stop('SIGTERM')).toBe(0)
    expect(tools.stderr).toContain('tool host stopped')
    expect(await watcher.stop('SIGINT')).toBe(0)
    expect(await reviewer.stop('SIGTERM')).toBe(0)
  })

  it('steer, status and cancel a running agent', async () => {
    tmp = await mkdtemp(path.join(os.tmpdir(), 'sbx-gate-'))
    const gate = path.join(tmp, 'open')
    const bus = busArgs(prefix)
    const agent = startProcess(['run', 'test/cli/fixtures/gate-agent.ts', '--scripted', '--run-id', 'run_gate_1', ...bus], {
      name: 'run',
      env: { SBX_GATE: gate },
    })
    await agent.waitFor(/tool\.start\s+wait_for_gate/)

    const steered = await runCli(['steer', 'gated', ...STEER_TEXT.split(' '), '--from', 'ops', ...bus])
    expect(steered.code, steered.output).toBe(0)
    expect(steered.stdout).toContain(
      `✔ queued "${STEER_TEXT}" from ops for run run_gate_1 of gated in flight: applied at the next tool call`,
    )
    expect(steered.stderr).toBe('')
    await agent.waitFor(/steering\.queued\s+"pay bob instead" from ops/)
    await writeFile(gate, '')

    // The correction cancelled the next call (alice); the model read it and asked for bob instead.
    await agent.waitFor(/steering\.applied\s+cancels send_payment/)
    await agent.waitFor(/approval\.requested send_payment\(\{"to":"bob","amount":1\}\)/)
    await agent.waitFor(/state\s+running\.turn\.toolCalls\.awaitingApproval/)

    const status = await runCli(['status', 'gated', ...bus])
    expect(status.code, status.output).toBe(0)
    expect(status.stdout).toContain('gated: 1 run in flight')
    expect(status.stdout).toMatch(/run_gate_1\s+turn\s+2\s+running\.turn\.toolCalls\.awaitingApproval/)

    const cancelled = await runCli(['cancel', 'gated', '--run', 'run_gate_1', '--reason', 'wrong payee', '--as', 'ops', ...bus])
    expect(cancelled.code, cancelled.output).toBe(0)
    expect(cancelled.stdout).toContain('✘ cancelled gated run_gate_1')
    expect(await agent.exited).toBe(130)
    expect(agent.stdout).toMatch(/✘ cancelled: RUN_CANCELLED: Run cancelled: wrong payee/)
  })
})

describe('signalbox run, embedded', () => {
  it('runs in this one process; without a terminal, --auto deny decides and the model reads the denial', async () => {
    const denied = await runCli(['run', 'test/cli/fixtures/local-agent.ts', '--scripted', '--model', 'denied', '--auto', 'deny'])
    expect(denied.code, denied.output).toBe(0)
    expect(denied.stdout).toContain('bus    embedded (in-process bus) · approvals: auto deny')
    expect(denied.stdout).toContain('│ tool       send_payment')
    expect(denied.stdout).toMatch(/tool\.end\s+send_payment · approval_denied/)
    expect(denied.stdout).toMatch(/approval\.denied\s+send_payment · auto-deny: denied/)
    // The scripted model only answers this if the denial reached it (lastTool('denied automatically...')).
    expect(denied.stdout).toContain('Final answer\n  The payment was denied, so I did not send it.')
  })
})
