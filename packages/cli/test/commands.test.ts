/**
 * Command variants in this process (`main(argv, io)`), against the shared NATS server with a
 * private prefix: JSON output, filters and clear errors. The same commands run as real child
 * processes, end to end, in test/cli/.
 */
import { busAuditLog, connectAgent, remoteReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { type AgentEvent, type AuditEntry, createAgent, OpenAIProvider, type Tool } from '@signalbox/core'
import { createSubjects, type Subjects } from '@signalbox/core/bus'
import { type ScriptedModelServer, startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { deleteStream } from '../../../test/cli/support.ts'
import { runMain, startMain } from '../../../test/support/cli-in-process.ts'
import { NATS_URL, uniquePrefix } from '../../../test/support/env.ts'

let prefix: string
let subjects: Subjects
let bus: NatsBus | undefined
let model: ScriptedModelServer | undefined
const cleanups: (() => unknown)[] = []

beforeEach(() => {
  prefix = uniquePrefix()
  subjects = createSubjects(prefix)
})

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  await model?.close()
  model = undefined
  await bus?.close()
  bus = undefined
  await deleteStream(prefix)
})

const busArgs = () => ['--nats', NATS_URL, '--prefix', prefix]

async function openBus(): Promise<NatsBus> {
  bus ??= await connectNatsBus({ servers: NATS_URL, prefix, name: 'cli-inprocess-test' })
  return bus
}

/** An agent on the bus in this process: `say` answers in words; `pay` waits for an approval nobody gives. */
async function agentOnBus() {
  const b = await openBus()
  model = await startScriptedModelServer({
    scripts: {
      say: [{ content: 'Hello there, general.' }],
      pay: [
        { toolCalls: [{ name: 'send_payment', arguments: { to: 'bob' } }] },
        // The steer test: each correction cancels the call waiting for approval, then the model reads it.
        { toolCalls: [{ name: 'send_payment', arguments: { to: 'carol' } }] },
        { content: 'Stopped.' },
        { toolCalls: [{ name: 'send_payment', arguments: { to: 'bob' } }] },
        { content: 'Understood: I pay nobody.' },
      ],
    },
  })
  const reviewer = remoteReviewer({ bus: b, subjects })
  // A hand-written tool (this package does not depend on zod).
  const sendPayment: Tool<{ to: string }> = {
    name: 'send_payment',
    description: 'pay',
    parameters: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    validate: (args) => ({ ok: true, value: args as { to: string } }),
    execute: () => 'sent',
    needsApproval: true,
  }
  const make = (name: string) =>
    createAgent({
      id: `agent-${name}`,
      provider: new OpenAIProvider({ baseURL: model?.url, apiKey: 'x', model: name }),
      tools: [sendPayment],
      reviewer,
    })
  const say = make('say')
  const pay = make('pay')
  const connections = [connectAgent(say, { bus: b, subjects }), connectAgent(pay, { bus: b, subjects })]
  await Promise.all(connections.map((c) => c.ready))
  cleanups.push(() => {
    for (const c of connections) c.close()
    reviewer.close()
  })
  return { say, pay }
}

describe('watch --json', () => {
  it('prints the raw events, one JSON object per line, text deltas and all', async () => {
    const { say } = await agentOnBus()
    const watch = startMain(['watch', 'agent-say', '--json', ...busArgs()])
    cleanups.push(() => watch.stop())
    await watch.waitFor('watching agent agent-say')
    expect(watch.stderr).toContain('watching agent agent-say') // the banner is not JSON: stderr
    await say.run('Greet me')
    await watch.waitFor('"type":"run.end"')
    expect(await watch.stop()).toBe(0)
    const events = watch.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as AgentEvent)
    expect(events[0]).toMatchObject({ type: 'run.start', agentId: 'agent-say', input: 'Greet me' })
    const deltas = events.filter((e): e is Extract<AgentEvent, { type: 'text.delta' }> => e.type === 'text.delta')
    expect(deltas.length).toBeGreaterThan(1)
    expect(deltas.map((d) => d.delta).join('')).toBe('Hello there, general.')
  })
})

describe('status and cancel', () => {
  it('--json gives the control reply; cancelling an unknown run fails; cancelling the run ends it', async () => {
    const { pay } = await agentOnBus()
    const handle = pay.start('Pay bob', { runId: 'run_pay_1' })
    handle.result.catch(() => {})
    await new Promise<void>((resolve) => {
      const off = pay.on('approval.requested', () => {
        off()
        resolve()
      })
    })
    const status = await runMain(['status', 'agent-pay', '--json', ...busArgs()])
    expect(status.code, status.output).toBe(0)
    expect(JSON.parse(status.stdout)).toEqual({
      v: 1,
      type: 'control.reply',
      agentId: 'agent-pay',
      runs: [{ runId: 'run_pay_1', state: 'running.turn.toolCalls.awaitingApproval', turn: 1 }],
    })
    const wrong = await runMain(['cancel', 'agent-pay', '--run', 'run_nope', ...busArgs()])
    expect(wrong.code).toBe(1)
    expect(wrong.stderr.trim()).toBe('error [RUN_NOT_FOUND]: agent "agent-pay" has no run run_nope in flight')
    const cancel = await runMain(['cancel', 'agent-pay', '--json', '--from', 'ops', ...busArgs()])
    expect(cancel.code).toBe(0)
    expect(JSON.parse(cancel.stdout)).toMatchObject({ type: 'control.reply', cancelled: ['run_pay_1'] })
    await expect(handle.result).rejects.toMatchObject({ result: { status: 'cancelled' } })
    const idle = await runMain(['status', 'agent-pay', ...busArgs()])
    expect(idle.stdout.trim()).toBe('agent-pay is on the bus, with no run in flight.')
  })

  it('an agent that is not on the bus: status fails clearly, steer warns', async () => {
    const [status, steer] = await Promise.all([
      runMain(['status', 'ghost', ...busArgs()]),
      runMain(['steer', 'ghost', 'hello', ...busArgs()]),
    ])
    expect(status.code).toBe(1)
    expect(status.stderr.trim()).toBe(
      `error [AGENT_NOT_FOUND]: agent "ghost" is not on the bus (nobody answers on ${prefix}.agents.ghost.control); is it running, with this --prefix?`,
    )
    // Queued durably, but nobody is there to apply it: no tick, and the warning says what happens to it.
    expect(steer.code).toBe(0)
    expect(steer.stdout).not.toContain('✔')
    expect(steer.stdout).toContain('queued (durably) "hello" from tester for ghost')
    expect(steer.stderr).toContain(
      'warning: no process of agent "ghost" is on the bus right now: nothing applies it now. Its runs kept in a run store apply it when a process started from now on resumes them',
    )
  })

  it('steer says who applies the correction: the runs in flight, the next run, or nobody (a run that is not there)', async () => {
    const { pay } = await agentOnBus()
    const once = (type: 'approval.requested' | 'steering.applied') =>
      new Promise<void>((resolve) => {
        const off = pay.on(type, () => {
          off()
          resolve()
        })
      })
    const applied: string[] = []
    cleanups.push(pay.on('steering.applied', (event) => applied.push(event.text)))
    let asked = once('approval.requested')
    const handle = pay.start('Pay bob', { runId: 'run_pay_2' })
    await asked

    const missed = await runMain(['steer', 'agent-pay', 'stop', '--run', 'run_gone', '--json', ...busArgs()])
    expect(missed.code).toBe(0)
    expect(JSON.parse(missed.stdout)).toMatchObject({
      runId: 'run_gone',
      agentOnline: true,
      runsInFlight: ['run_pay_2'],
      appliedBy: 'nobody-now',
    })
    expect(missed.stderr).toContain(
      'agent "agent-pay" has no run run_gone in flight (in flight: run_pay_2), so it does not apply it.',
    )

    asked = once('approval.requested')
    const busy = await runMain(['steer', 'agent-pay', 'pay', 'carol', ...busArgs()])
    expect(busy.stdout).toContain(
      '✔ queued "pay carol" from tester for run run_pay_2 of agent-pay in flight: applied at the next tool call',
    )
    expect(busy.stderr).toBe('')
    await asked
    const aimed = await runMain(['steer', 'agent-pay', 'stop', '--run', 'run_pay_2', ...busArgs()])
    expect(aimed.stdout).toContain('✔ queued "stop" from tester for run run_pay_2 of agent-pay: applied at its next tool call')
    expect((await handle.result).output).toBe('Stopped.')
    expect(applied).toEqual(['pay carol', 'stop'])

    // No run in flight: the next run gets it, at its first tool call.
    const idle = await runMain(['steer', 'agent-pay', 'pay', 'nobody', ...busArgs()])
    expect(idle.code, idle.output).toBe(0)
    expect(idle.stdout).toContain(
      '✔ queued "pay nobody" from tester for agent-pay: no run in flight, so its next run starts with it',
    )
    expect(idle.stderr).toBe('')
    const next = await pay.run('Pay bob')
    expect(next.output).toBe('Understood: I pay nobody.')
    expect(applied).toEqual(['pay carol', 'stop', 'pay nobody'])
  })

  it('steer --json returns the message it stored', async () => {
    await agentOnBus()
    const steer = await runMain(['steer', 'agent-say', 'be', 'brief', '--run', 'run_x', '--json', ...busArgs()])
    expect(steer.code, steer.output).toBe(0)
    expect(JSON.parse(steer.stdout)).toMatchObject({
      v: 1,
      type: 'steer',
      text: 'be brief',
      from: 'tester',
      runId: 'run_x',
      agentOnline: true,
    })
  })
})

describe('audit', () => {
  it('--json lists the stored entries oldest first; --agent, --run, --tool and --kind filter', async () => {
    const b = await openBus()
    const audit = busAuditLog({ bus: b, subjects })
    const base = { runPath: [], requestedAt: 1_000, decidedAt: 2_000, latencyMs: 1_000 }
    const entries: AuditEntry[] = [
      {
        ...base,
        kind: 'approval.granted',
        agentId: 'claw',
        runId: 'run_a',
        callId: 'c1',
        toolName: 'drop_claw',
        shown: {},
        decision: 'approved',
        actor: 'tina',
      },
      {
        ...base,
        kind: 'approval.denied',
        agentId: 'claw',
        runId: 'run_b',
        callId: 'c2',
        toolName: 'drop_claw',
        shown: {},
        decision: 'denied',
        reason: 'not yet',
        actor: 'tina',
      },
      {
        ...base,
        kind: 'approval.timeout',
        agentId: 'bank',
        runId: 'run_c',
        callId: 'c3',
        toolName: 'wire',
        shown: { amount: 5 },
        decision: 'timeout',
        actor: 'system',
      },
      {
        ...base,
        kind: 'steering.applied',
        agentId: 'claw',
        runId: 'run_a',
        callId: 'c4',
        toolName: 'move_claw',
        shown: 'the penguin',
        decision: 'the penguin',
        actor: 'tina',
      },
    ]
    for (const entry of entries) await audit.record(entry)

    const all = await runMain(['audit', '--json', ...busArgs()])
    expect(all.code, all.output).toBe(0)
    expect(
      all.stdout
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)),
    ).toEqual(entries)
    const ids = async (...flags: string[]) => {
      const result = await runMain(['audit', '--json', ...flags, ...busArgs()])
      return result.stdout
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as AuditEntry).callId)
    }
    expect(await ids('--agent', 'claw')).toEqual(['c1', 'c2', 'c4'])
    expect(await ids('--run', 'run_a')).toEqual(['c1', 'c4'])
    expect(await ids('--tool', 'drop_claw', '--kind', 'approval.denied')).toEqual(['c2'])
    expect(await ids('--agent', 'bank', '--kind', 'approval.granted')).toEqual([])

    const table = await runMain(['audit', '--agent', 'claw', ...busArgs()])
    expect(table.stdout).toMatch(/claw\s+run_b\s+drop_claw\s+approval\.denied\s+tina\s+denied\s+not yet\s+1\.0 s/)
    expect(table.stdout).toContain('3 entries')
  })

  it('--follow prints entries as they are recorded, until stopped', async () => {
    const b = await openBus()
    const follow = startMain(['audit', '--follow', ...busArgs()])
    cleanups.push(() => follow.stop())
    await follow.waitFor('TIME')
    await new Promise((resolve) => setTimeout(resolve, 300))
    await busAuditLog({ bus: b, subjects }).record({
      kind: 'question.answered',
      agentId: 'claw',
      runId: 'run_q',
      runPath: [],
      toolName: 'ask_kid',
      shown: 'Which bear?',
      decision: 'The polar bear!',
      actor: 'tina',
      decidedAt: Date.now(),
    })
    await follow.waitFor('The polar bear!')
    expect(await follow.stop()).toBe(0)
  })
})

describe('run', () => {
  it('--nats: no tool host for a remote tool is a clear error after the wait', async () => {
    const result = await runMain([
      'run',
      'test/cli/fixtures/payments-agent.ts',
      '--scripted',
      '--wait-tools',
      '200',
      ...busArgs(),
    ])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain(
      `error [TOOLS_NOT_FOUND]: no tool host serves lookup_account on ${prefix} (start one: signalbox tools serve <module> --prefix ${prefix})`,
    )
  })

  it('embedded: --json prints the events, the states and the result; failures exit 1 with the reason', async () => {
    const [approved, broken, noScript, remoteOnly, notAgent, noInput] = await Promise.all([
      runMain(['run', 'test/cli/fixtures/local-agent.ts', '--scripted', '--model', 'approved', '--auto', 'approve', '--json']),
      runMain(['run', 'test/cli/fixtures/local-agent.ts', '--scripted', '--model', 'broken']),
      runMain(['run', 'test/cli/fixtures/local-agent.ts', '--scripted', '--model', 'missing']),
      runMain(['run', 'test/cli/fixtures/remote-only-agent.ts', '--scripted']),
      runMain(['run', 'test/cli/fixtures/not-an-agent.ts']),
      runMain(['run', 'test/cli/fixtures/remote-only-agent.ts', '--auto', 'approve', ...busArgs()]),
    ])
    expect(approved.code, approved.output).toBe(0)
    const records = approved.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { type: string; [k: string]: unknown })
    expect(records.at(-1)).toMatchObject({ type: 'result', status: 'done', output: 'Sent.' })
    expect(records.filter((r) => r.type === 'state').map((r) => r.state)).toContain('running.turn.toolCalls.awaitingApproval')
    expect(records.find((r) => r.type === 'approval.decided')).toMatchObject({
      decision: { approved: true, reviewer: 'auto-approve' },
    })
    expect(records.find((r) => r.type === 'tool.end')).toMatchObject({
      toolName: 'send_payment',
      outcome: 'executed',
      output: 'sent 9000 to mallory',
    })

    expect(broken.code).toBe(1)
    expect(broken.stdout).toMatch(/✘ failed: PROVIDER_REJECTED: .*the model refuses this request/)
    expect(noScript.code).toBe(1)
    expect(noScript.stderr).toContain(
      'error [NO_SCRIPT]: test/cli/fixtures/local-agent.ts has no script for model "missing" (scripts: denied, approved, broken)',
    )
    expect(remoteOnly.code).toBe(1)
    expect(remoteOnly.stderr).toContain(
      'error [NO_BUS]: test/cli/fixtures/remote-only-agent.ts uses remote tools (lookup_account)',
    )
    expect(notAgent.code).toBe(1)
    expect(notAgent.stderr).toContain('is not an agent module:\n  - id must be 1-64 letters')
    expect(noInput.code).toBe(2)
    expect(noInput.stderr).toContain('error [USAGE]: --auto and --answer are for embedded runs')
  })
})
