/**
 * The human-in-the-loop seed, traced with the real OpenTelemetry SDK: approvals, a question and a
 * steering correction as spans and span events, and the reviewer asked inside the approval span.
 */

import { trace } from '@opentelemetry/api'
import { type Reviewer, ScriptedAnswerer, ScriptedReviewer } from '@signalbox/core'
import { ClawMachine, createClawAgent } from '@signalbox/examples/claw/agent.ts'
import { type ClawScenario, clawScenarios, QUESTION, STEERING_TEXT, tinaWatches } from '@signalbox/examples/claw/script.ts'
import { traceAgent } from '@signalbox/otel'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { scriptedModel } from '../e2e/support/scripted.ts'
import { find, memoryTracing, outline, parentOf, registerGlobally, spanTree } from './spans.ts'

let unregister: (() => void) | undefined
afterEach(() => {
  unregister?.()
  unregister = undefined
})

async function tracedClaw(scenario: ClawScenario, options: { captureContent?: boolean } = {}) {
  const { server, provider } = await scriptedModel({ [scenario.model]: scenario.script })
  const tracing = memoryTracing()
  unregister = registerGlobally(tracing.provider)
  const scripted = new ScriptedReviewer(scenario.verdicts, { name: 'tina' })
  /** The span active while the reviewer was asked (what a remote reviewer's request would carry). */
  const activeDuringReview: (string | undefined)[] = []
  const reviewer: Reviewer = {
    review: (request, reviewOptions) => {
      activeDuringReview.push(trace.getActiveSpan()?.spanContext().spanId)
      return scripted.review(request, reviewOptions)
    },
  }
  const agent = createClawAgent({
    provider: provider(scenario.model),
    reviewer,
    answerer: new ScriptedAnswerer(scenario.answers, { name: 'tina' }),
    machine: new ClawMachine(),
  })
  const detach = traceAgent(agent, options)
  if (scenario.steer) tinaWatches(agent, scenario.steer)
  const result = await agent.run(scenario.prompt)
  detach()
  server.assertDone()
  return { result, spans: tracing.spans(), activeDuringReview }
}

describe('traceAgent: the claw runs (approval, question, steering)', () => {
  it('puts the wait for a person under the tool call it holds: a question, then an approval', async () => {
    const { spans, activeDuringReview } = await tracedClaw(clawScenarios.question)
    expect(outline(spanTree(spans))).toEqual([
      'invoke_agent claw',
      '  signalbox.turn 1',
      '    chat claw-question',
      '    execute_tool ask_kid',
      '      signalbox.question',
      '  signalbox.turn 2',
      '    chat claw-question',
      '    execute_tool move_claw',
      '  signalbox.turn 3',
      '    chat claw-question',
      '    execute_tool drop_claw',
      '      signalbox.approval drop_claw',
      '  signalbox.turn 4',
      '    chat claw-question',
    ])
    const [question] = find(spans, 'signalbox.question')
    expect(question?.attributes).toMatchObject({
      'signalbox.question.outcome': 'answered',
      'signalbox.question.answered_by': 'tina',
    })
    expect(question?.attributes['signalbox.latency_ms']).toBeTypeOf('number')
    // Contents are opt-in: the question's text is not there.
    expect(JSON.stringify(question?.attributes)).not.toContain(QUESTION)

    const [approval] = find(spans, 'signalbox.approval drop_claw')
    expect(approval?.attributes).toMatchObject({
      'signalbox.approval.decision': 'approved',
      'signalbox.approval.reviewer': 'tina',
      'gen_ai.tool.name': 'drop_claw',
    })
    expect(approval?.attributes['signalbox.approval.request_id']).toBeTypeOf('string')
    expect(parentOf(spans, approval!)?.attributes['signalbox.tool.outcome']).toBe('executed')
    // The reviewer was asked inside the approval span: a remote reviewer's request carries it.
    expect(activeDuringReview).toEqual([approval?.spanContext().spanId])
  })

  it('records a denial as the decision, and the call as not run', async () => {
    const { spans } = await tracedClaw(clawScenarios.deny)
    const [approval] = find(spans, 'signalbox.approval drop_claw')
    expect(approval?.attributes).toMatchObject({ 'signalbox.approval.decision': 'denied', 'signalbox.approval.reviewer': 'tina' })
    expect(parentOf(spans, approval!)?.attributes['signalbox.tool.outcome']).toBe('approval_denied')
  })

  it('shows a steering correction: queued on the run, applied to the call it cancelled', async () => {
    const { spans } = await tracedClaw(clawScenarios.steer, { captureContent: true })
    const [run] = find(spans, 'invoke_agent claw')
    const queued = run?.events.filter((e) => e.name === 'signalbox.steering.queued')
    expect(queued?.map((e) => e.attributes)).toEqual([
      { 'signalbox.steering.from': 'tina', 'signalbox.steering.text': STEERING_TEXT },
    ])
    const drops = find(spans, 'execute_tool drop_claw')
    expect(drops).toHaveLength(1)
    expect(drops[0]?.attributes['signalbox.tool.outcome']).toBe('steered')
    expect(drops[0]?.events.map((e) => e.name)).toEqual(['signalbox.steering.applied'])
    // Cancelled before review: no approval span.
    expect(find(spans, 'signalbox.approval drop_claw')).toEqual([])
  })
})

describe('traceAgent: a call nobody could review', () => {
  it('ends as unavailable, not as a timeout: no deadline passed', async () => {
    const { provider } = await scriptedModel({ [clawScenarios.approve.model]: clawScenarios.approve.script })
    const tracing = memoryTracing()
    unregister = registerGlobally(tracing.provider)
    // The reviewer's connection failed: nobody can be asked.
    const agent = createClawAgent({
      provider: provider(clawScenarios.approve.model),
      reviewer: { review: () => Promise.reject(new Error('the reviewer connection was closed')) },
      answerer: new ScriptedAnswerer([], { name: 'tina' }),
      machine: new ClawMachine(),
    })
    const detach = traceAgent(agent)
    await agent.run(clawScenarios.approve.prompt).catch(() => {})
    detach()
    const spans = tracing.spans()
    const [approval] = find(spans, 'signalbox.approval drop_claw')
    expect(approval?.attributes['signalbox.approval.decision']).toBe('unavailable')
    const call = parentOf(spans, approval!)
    expect(call?.attributes['signalbox.tool.outcome']).toBe('approval_unavailable')
    expect(call?.attributes['error.type']).toBe('approval_unavailable')
  })
})

describe('traceAgent: off at no cost', () => {
  it('attaches nothing (no listener, no instrumentation) when no tracer provider is registered', async () => {
    const { server, provider } = await scriptedModel({ [clawScenarios.approve.model]: clawScenarios.approve.script })
    const agent = createClawAgent({
      provider: provider(clawScenarios.approve.model),
      reviewer: new ScriptedReviewer(clawScenarios.approve.verdicts, { name: 'tina' }),
      answerer: new ScriptedAnswerer([], { name: 'tina' }),
    })
    const on = vi.spyOn(agent, 'on')
    const instrument = vi.spyOn(agent, 'instrument')
    const detach = traceAgent(agent)
    expect(on).not.toHaveBeenCalled()
    expect(instrument).not.toHaveBeenCalled()
    await agent.run(clawScenarios.approve.prompt)
    detach()
    server.assertDone()
  })

  it('attaches once a provider is registered globally', async () => {
    const tracing = memoryTracing()
    unregister = registerGlobally(tracing.provider)
    const { provider } = await scriptedModel({})
    const agent = createClawAgent({
      provider: provider('unused'),
      reviewer: new ScriptedReviewer([], { name: 'tina' }),
      answerer: new ScriptedAnswerer([], { name: 'tina' }),
    })
    const instrument = vi.spyOn(agent, 'instrument')
    const detach = traceAgent(agent)
    expect(instrument).toHaveBeenCalledTimes(1)
    detach()
  })
})
