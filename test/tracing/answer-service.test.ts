/**
 * A question answered by an answer service on the bus (in-process bus, the same protocol): the
 * service's span joins the agent's trace under the tool call that asked.
 */
import { remoteAnswerer, serveAnswerer } from '@signalbox/actors'
import { functionAnswerer, ScriptedReviewer } from '@signalbox/core'
import { createInProcessBus } from '@signalbox/core/bus'
import { ClawMachine, createClawAgent } from '@signalbox/examples/claw/agent.ts'
import { ANSWER, clawScenarios } from '@signalbox/examples/claw/script.ts'
import { traceAgent, traceAnswerer, withTraceContext } from '@signalbox/otel'
import { afterEach, describe, expect, it } from 'vitest'
import { scriptedModel } from '../e2e/support/scripted.ts'
import { find, memoryTracing, parentOf, registerGlobally } from './spans.ts'

let unregister: (() => void) | undefined
afterEach(() => {
  unregister?.()
  unregister = undefined
})

describe('traceAnswerer behind withTraceContext', () => {
  it('puts the answer service’s span under the agent’s ask_kid call, in one trace', async () => {
    const scenario = clawScenarios.question
    const { server, provider } = await scriptedModel({ [scenario.model]: scenario.script })
    const tracing = memoryTracing()
    unregister = registerGlobally(tracing.provider)
    const bus = withTraceContext(createInProcessBus())
    const service = serveAnswerer({ bus, answerer: traceAnswerer(functionAnswerer(() => ANSWER, { name: 'tina' })) })
    await service.ready
    const answerer = remoteAnswerer({ bus })
    const agent = createClawAgent({
      provider: provider(scenario.model),
      reviewer: new ScriptedReviewer(scenario.verdicts, { name: 'tina' }),
      answerer,
      machine: new ClawMachine(),
    })
    traceAgent(agent)
    await agent.run(scenario.prompt)
    server.assertDone()
    answerer.close()
    service.close()
    await bus.close()

    const spans = tracing.spans()
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1)
    const [ask] = find(spans, 'execute_tool ask_kid')
    const [answered] = find(spans, 'signalbox.answer')
    expect(answered && parentOf(spans, answered)).toBe(ask)
    expect(answered?.attributes).toMatchObject({
      'signalbox.question.answered_by': 'tina',
      'gen_ai.tool.call.id': ask?.attributes['gen_ai.tool.call.id'],
    })
    // Contents are opt-in on the service too.
    expect(JSON.stringify(answered?.attributes)).not.toContain(ANSWER)
    const [question] = find(spans, 'signalbox.question')
    expect(question && parentOf(spans, question)).toBe(ask)
  })
})
