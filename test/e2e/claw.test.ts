/**
 * The human-in-the-loop seed end to end: the claw agent over HTTP (real openai SDK, scripted model
 * server), with a scripted Tina. Each test checks what the model was actually sent.
 */
import { type AgentOptions, MemoryAuditLog, ScriptedAnswerer, ScriptedReviewer } from '@signalbox/core'
import { callDigest } from '@signalbox/core/protocol'
import { CLAW_INSTRUCTIONS, ClawMachine, createClawAgent } from '@signalbox/examples/claw/agent.ts'
import {
  ANSWER,
  type ClawScenario,
  clawScenarios,
  DENY_REASON,
  QUESTION,
  STEERING_TEXT,
  tinaWatches,
} from '@signalbox/examples/claw/script.ts'
import { describe, expect, it } from 'vitest'
import { runExample } from './support/run-example.ts'
import { eventsOf, lastMessage, onlyCall, recordEvents, scriptedModel } from './support/scripted.ts'
import { createSimulatedClock } from './support/simulated-clock.ts'

const FIVE_MINUTES = 5 * 60_000

async function setUp(scenario: ClawScenario, options: Pick<AgentOptions, 'clock' | 'approvalTimeoutMs'> = {}) {
  const { server, provider } = await scriptedModel({ [scenario.model]: scenario.script })
  const clock = options.clock
  const reviewer = new ScriptedReviewer(scenario.verdicts, { name: 'tina', ...(clock ? { clock } : {}) })
  const answerer = new ScriptedAnswerer(scenario.answers, { name: 'tina', ...(clock ? { clock } : {}) })
  const machine = new ClawMachine()
  const audit = new MemoryAuditLog()
  const agent = createClawAgent({
    provider: provider(scenario.model),
    reviewer,
    answerer,
    machine,
    audit,
    approvalTimeoutMs: options.approvalTimeoutMs ?? FIVE_MINUTES,
    ...(clock ? { clock } : {}),
  })
  const events = recordEvents(agent)
  if (scenario.steer) tinaWatches(agent, scenario.steer)
  return { server, reviewer, answerer, machine, audit, agent, events }
}

describe('claw: the seed’s system prompt and tools', () => {
  it('sends the system prompt first and the three tools, drop_claw with no arguments', async () => {
    const { server, agent } = await setUp(clawScenarios.approve)
    await agent.run(clawScenarios.approve.prompt)
    const [first] = server.requests
    expect(first?.messages).toEqual([
      { role: 'system', content: CLAW_INSTRUCTIONS },
      { role: 'user', content: 'Get me the teddy bear!' },
    ])
    expect(first?.tools.map((t) => t.name)).toEqual(['move_claw', 'drop_claw', 'ask_kid'])
    expect(first?.tools[1]?.parameters).toMatchObject({ type: 'object', properties: {} })
    expect(first?.tools[2]?.parameters).toMatchObject({ properties: { question: { type: 'string' } }, required: ['question'] })
  })
})

describe('claw: approve', () => {
  it('runs drop_claw only after Tina’s yes, and shows her the exact call', async () => {
    const { server, reviewer, machine, audit, agent, events } = await setUp(clawScenarios.approve)
    const result = await agent.run(clawScenarios.approve.prompt)
    server.assertDone()
    expect(result.output).toBe(clawScenarios.approve.answer)

    const drop = onlyCall(result.messages, 'drop_claw')
    expect(reviewer.requests).toHaveLength(1)
    const request = reviewer.requests[0]!
    expect(request).toMatchObject({
      agentId: 'claw',
      runId: result.runId,
      callId: drop.id,
      toolName: 'drop_claw',
      arguments: {},
      digest: callDigest('drop_claw', {}),
    })
    expect(request.deadline - request.requestedAt).toBe(FIVE_MINUTES)
    expect(eventsOf(events, 'approval.requested').map((e) => e.request)).toEqual([request])

    // The tool ran after the decision, exactly once.
    const types = events.map((e) => (e.type === 'tool.start' ? `tool.start:${e.toolName}` : e.type))
    expect(types.indexOf('approval.decided')).toBeLessThan(types.indexOf('tool.start:drop_claw'))
    expect(machine.drops).toEqual([{ over: 'teddy bear', won: 'teddy bear' }])
    expect(machine.coins).toBe(0)

    expect(lastMessage(server.requests[2])).toMatchObject({ role: 'tool', tool_call_id: drop.id })
    expect(lastMessage(server.requests[2])?.content).toContain('grabbed the teddy bear')
    expect(audit.entries).toMatchObject([{ kind: 'approval.granted', actor: 'tina', callId: drop.id, digest: request.digest }])
  })
})

describe('claw: deny', () => {
  it('never runs drop_claw, and the model reads Tina’s reason', async () => {
    const { server, reviewer, machine, audit, agent, events } = await setUp(clawScenarios.deny)
    const result = await agent.run(clawScenarios.deny.prompt)
    server.assertDone()
    expect(reviewer.requests).toHaveLength(1)

    expect(machine.drops).toEqual([])
    expect(machine.coins).toBe(1)
    expect(eventsOf(events, 'tool.start').map((e) => e.toolName)).toEqual(['move_claw'])

    const drop = onlyCall(result.messages, 'drop_claw')
    const refusal = lastMessage(server.requests[2])
    expect(refusal).toMatchObject({ role: 'tool', tool_call_id: drop.id })
    expect(refusal?.content).toContain(DENY_REASON)
    expect(refusal?.content).toContain('not executed')
    expect(eventsOf(events, 'tool.end').at(-1)).toMatchObject({
      toolName: 'drop_claw',
      outcome: 'approval_denied',
      isError: true,
    })
    expect(audit.entries).toMatchObject([{ kind: 'approval.denied', actor: 'tina', reason: DENY_REASON }])
    expect(result.output).toBe(clawScenarios.deny.answer)
  })
})

describe('claw: timeout-deny (simulated clock)', () => {
  it('denies by default when nobody answers by the deadline, and tells the model why', async () => {
    const clock = createSimulatedClock()
    const { server, reviewer, machine, audit, agent, events } = await setUp(clawScenarios.timeout, { clock })
    let asked = false
    const requested = new Promise<void>((resolve) =>
      agent.on('approval.requested', () => {
        asked = true
        resolve()
      }),
    )
    const handle = agent.start(clawScenarios.timeout.prompt)
    const ended = handle.result.then(
      () => {},
      () => {},
    )
    await Promise.race([requested, ended])
    expect(asked).toBe(true)
    const awaiting = () => handle.actor.getSnapshot().matches({ running: { turn: { toolCalls: 'awaitingApproval' } } })
    expect(awaiting()).toBe(true)

    // Real time passing changes nothing: only the agent's clock decides.
    await new Promise((resolve) => setTimeout(resolve, 50))
    clock.increment(FIVE_MINUTES - 1)
    expect(awaiting()).toBe(true)
    clock.increment(1)
    expect(awaiting()).toBe(false)

    const result = await handle.result
    server.assertDone()
    expect(result.output).toBe(clawScenarios.timeout.answer)
    expect(reviewer.requests).toHaveLength(1)
    expect(machine.drops).toEqual([])
    expect(machine.coins).toBe(1)
    expect(eventsOf(events, 'approval.timeout')).toHaveLength(1)
    expect(eventsOf(events, 'approval.decided')).toHaveLength(0)

    const drop = onlyCall(result.messages, 'drop_claw')
    const refusal = lastMessage(server.requests[2])
    expect(refusal).toMatchObject({ role: 'tool', tool_call_id: drop.id })
    expect(refusal?.content).toContain('nobody approved "drop_claw" within 5 min')
    expect(refusal?.content).toContain('denied by default')
    // Recorded as a timeout by the system, not as a person's decision.
    expect(audit.entries).toMatchObject([
      { kind: 'approval.timeout', actor: 'system', decision: 'timeout', latencyMs: FIVE_MINUTES },
    ])
  })
})

describe('claw: steering', () => {
  it('“No, wait! The penguin!” cancels the next call: drop_claw never runs, the model reads the correction', async () => {
    const { server, reviewer, machine, audit, agent, events } = await setUp(clawScenarios.steer)
    const result = await agent.run(clawScenarios.steer.prompt)
    server.assertDone()
    expect(result.output).toBe(clawScenarios.steer.answer)

    const drop = onlyCall(result.messages, 'drop_claw')
    expect(lastMessage(server.requests[2])).toEqual({
      role: 'tool',
      tool_call_id: drop.id,
      content: `Cancelled. The person says: ${STEERING_TEXT}`,
    })
    expect(eventsOf(events, 'steering.queued')).toMatchObject([{ text: STEERING_TEXT, from: 'tina' }])
    expect(eventsOf(events, 'steering.applied')).toMatchObject([{ callId: drop.id, toolName: 'drop_claw', text: STEERING_TEXT }])
    expect(eventsOf(events, 'tool.end').find((e) => e.callId === drop.id)).toMatchObject({ outcome: 'steered' })

    // The cancelled drop was never reviewed nor run; the model moved to the penguin instead.
    expect(reviewer.requests).toHaveLength(0)
    expect(eventsOf(events, 'approval.requested')).toHaveLength(0)
    expect(eventsOf(events, 'tool.start').map((e) => e.toolName)).toEqual(['move_claw', 'move_claw'])
    expect(machine.drops).toEqual([])
    expect(machine.coins).toBe(1)
    expect(machine.moves).toEqual(['teddy bear', 'penguin'])
    expect(result.pendingSteering).toEqual([])
    expect(audit.entries).toMatchObject([{ kind: 'steering.applied', actor: 'tina', decision: STEERING_TEXT, callId: drop.id }])
  })
})

describe('claw: escalate (ask_kid)', () => {
  it('asks Tina which bear, and the model reads her answer', async () => {
    const { server, answerer, machine, audit, agent, events } = await setUp(clawScenarios.question)
    const result = await agent.run(clawScenarios.question.prompt)
    server.assertDone()
    expect(result.output).toBe(clawScenarios.question.answer)

    const ask = onlyCall(result.messages, 'ask_kid')
    expect(answerer.questions).toHaveLength(1)
    expect(answerer.questions[0]).toMatchObject({ question: QUESTION, callId: ask.id, runId: result.runId, agentId: 'claw' })
    expect(lastMessage(server.requests[1])).toEqual({ role: 'tool', tool_call_id: ask.id, content: ANSWER })
    expect(eventsOf(events, 'question.answered')).toMatchObject([{ answer: ANSWER, answeredBy: 'tina' }])

    // The answer changed what the agent did: it went for the polar bear.
    expect(onlyCall(result.messages, 'move_claw').function.arguments).toBe(JSON.stringify({ to: 'polar bear' }))
    expect(machine.drops).toEqual([{ over: 'polar bear', won: 'polar bear' }])
    expect(audit.entries.map((e) => [e.kind, e.actor, e.decision])).toEqual([
      ['question.answered', 'tina', ANSWER],
      ['approval.granted', 'tina', 'approved'],
    ])
  })
})

describe('examples/claw/demo.ts --auto', () => {
  it('plays the five scenarios unattended and exits 0', async () => {
    const { code, stdout, stderr } = await runExample('examples/claw/demo.ts', ['--auto'])
    expect(stderr).toBe('')
    expect(code).toBe(0)
    for (const scenario of Object.values(clawScenarios)) expect(stdout).toContain(`Final answer\n  ${scenario.answer}\n`)
    expect(stdout).toContain('running.turn.toolCalls.awaitingApproval')
    expect(stdout).toContain(`steering.applied    cancels drop_claw`)
    expect(stdout).toContain('approval.timeout')
    expect(stdout.match(/✔ done/g)).toHaveLength(5)
  })
})
