/**
 * The hooks seed, traced with the real OpenTelemetry SDK: the trains agent over HTTP (scripted
 * model server, real openai SDK), spans exported to memory.
 */

import { SpanStatusCode } from '@opentelemetry/api'
import { createTrainsAgent, FIRST_CLASS_REASON, PASSENGER } from '@signalbox/examples/trains/agent.ts'
import { TRAINS_MODEL, TRAINS_PROMPT, trainsScript } from '@signalbox/examples/trains/script.ts'
import { traceAgent } from '@signalbox/otel'
import { describe, expect, it } from 'vitest'
import { onlyCall, scriptedModel } from '../e2e/support/scripted.ts'
import { find, memoryTracing, outline, parentOf, spanTree } from './spans.ts'

async function tracedTrains(options: { captureContent?: boolean } = {}) {
  const { server, provider } = await scriptedModel({ [TRAINS_MODEL]: trainsScript })
  const agent = createTrainsAgent({ provider: provider(TRAINS_MODEL) })
  const tracing = memoryTracing()
  const detach = traceAgent(agent, { tracerProvider: tracing.provider, ...options })
  const result = await agent.run(TRAINS_PROMPT)
  detach()
  server.assertDone()
  return { result, spans: tracing.spans() }
}

describe('traceAgent: the trains run (hooks deny and mask)', () => {
  it('builds one tree: run > turns > model call and tool calls > the hooks that ran', async () => {
    const { spans } = await tracedTrains()
    const tree = spanTree(spans)
    expect(outline(tree)).toEqual([
      'invoke_agent trains',
      '  signalbox.turn 1',
      '    chat scripted-trains',
      '    execute_tool find_trains',
      '      signalbox.hook firstClassPolicy',
      '      signalbox.hook maskIds',
      '  signalbox.turn 2',
      '    chat scripted-trains',
      '    execute_tool book_ticket',
      '      signalbox.hook firstClassPolicy',
      '      signalbox.hook maskIds',
      '  signalbox.turn 3',
      '    chat scripted-trains',
      '    execute_tool book_ticket',
      '      signalbox.hook firstClassPolicy',
      '      signalbox.hook maskIds',
      '  signalbox.turn 4',
      '    chat scripted-trains',
    ])
    // Every span in one trace.
    expect(new Set(spans.map((s) => s.spanContext().traceId)).size).toBe(1)
  })

  it('marks the run with the GenAI conventions and its outcome', async () => {
    const { spans, result } = await tracedTrains()
    const [run] = find(spans, 'invoke_agent trains')
    expect(run?.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.id': 'trains',
      'gen_ai.request.model': TRAINS_MODEL,
      'signalbox.agent.id': 'trains',
      'signalbox.run.id': result.runId,
      'signalbox.run.status': 'done',
      'signalbox.run.turns': 4,
      'gen_ai.usage.input_tokens': result.usage.promptTokens,
      'gen_ai.usage.output_tokens': result.usage.completionTokens,
    })
    const chats = find(spans, `chat ${TRAINS_MODEL}`)
    expect(chats).toHaveLength(4)
    for (const chat of chats) {
      expect(chat.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': TRAINS_MODEL })
      expect(chat.attributes['gen_ai.response.finish_reasons']).toBeDefined()
    }
    expect(chats.at(-1)?.attributes['gen_ai.response.finish_reasons']).toEqual(['stop'])
    const reported = chats.reduce((sum, chat) => sum + Number(chat.attributes['gen_ai.usage.input_tokens'] ?? 0), 0)
    expect(reported).toBe(result.usage.promptTokens)
  })

  it('shows the policy hook denying first class and the masking hook rewriting the booking', async () => {
    const { spans, result } = await tracedTrains()
    const bookings = find(spans, 'execute_tool book_ticket')
    expect(bookings.map((s) => s.attributes['signalbox.tool.outcome'])).toEqual(['denied', 'executed'])
    const firstClass = onlyCall(result.messages, 'book_ticket', { train: 101, seat_class: 'first' })
    expect(bookings[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'book_ticket',
      'gen_ai.tool.call.id': firstClass.id,
    })
    // A denial is an expected outcome, not an error.
    expect(bookings[0]?.status.code).not.toBe(SpanStatusCode.ERROR)

    const policy = find(spans, 'signalbox.hook firstClassPolicy')
    const decisions = policy.map((s) => [
      parentOf(spans, s)?.attributes['gen_ai.tool.name'],
      s.attributes['signalbox.hook.decision'],
    ])
    expect(decisions).toEqual([
      ['find_trains', 'allow'],
      ['book_ticket', 'deny'],
      ['book_ticket', 'allow'],
    ])
    expect(policy[1]?.attributes).toMatchObject({ 'signalbox.hook.point': 'beforeToolExecution', 'signalbox.hook.index': 0 })
    const masks = find(spans, 'signalbox.hook maskIds')
    // The masking hook returns the text the model reads, for every call (the denial included).
    expect(masks.map((s) => parentOf(spans, s)?.attributes['signalbox.tool.outcome'])).toEqual(['executed', 'denied', 'executed'])
    expect(masks.map((s) => s.attributes['signalbox.hook.rewrote'])).toEqual([true, true, true])
    expect(masks[0]?.attributes).toMatchObject({ 'signalbox.hook.point': 'afterToolExecution', 'signalbox.hook.index': 1 })
  })

  it('records no contents by default: no prompt, arguments, results or answer', async () => {
    const { spans } = await tracedTrains()
    const everything = JSON.stringify(spans.map((s) => [s.attributes, s.events]))
    expect(everything).not.toContain('Mar del Plata')
    expect(everything).not.toContain(FIRST_CLASS_REASON)
    expect(everything).not.toContain(PASSENGER.name)
    expect(everything).not.toContain('gen_ai.input.messages')
  })

  it('records contents when opted in, after the hooks: the model-facing result is masked', async () => {
    const { spans } = await tracedTrains({ captureContent: true })
    const everything = JSON.stringify(spans.map((s) => [s.attributes, s.events]))
    expect(everything).not.toContain(PASSENGER.dni)
    const bookings = find(spans, 'execute_tool book_ticket')
    expect(bookings[0]?.attributes['gen_ai.tool.call.result']).toBe(FIRST_CLASS_REASON)
    expect(bookings[1]?.attributes['gen_ai.tool.call.arguments']).toBe('{"train":101,"seat_class":"tourist"}')
    expect(bookings[1]?.attributes['gen_ai.tool.call.result']).toContain(`${PASSENGER.name} (DNI ***)`)
    const [run] = find(spans, 'invoke_agent trains')
    expect(run?.attributes['signalbox.run.input']).toBe(TRAINS_PROMPT)
    expect(String(find(spans, `chat ${TRAINS_MODEL}`)[0]?.attributes['gen_ai.input.messages'])).toContain(TRAINS_PROMPT)
  })
})

describe('traceAgent: errors carry their code', () => {
  it('marks a run failed by a throwing hook, and the hook’s span, with the error code', async () => {
    const { server, provider } = await scriptedModel({ [TRAINS_MODEL]: trainsScript.slice(0, 2) })
    const tracing = memoryTracing()
    const broken = {
      beforeToolExecution: async function auditTrail({ toolName }: { toolName: string }) {
        if (toolName === 'book_ticket') throw new Error('the audit trail is down')
      },
    }
    const agent = createTrainsAgent({ provider: provider(TRAINS_MODEL), hooks: [broken] })
    traceAgent(agent, { tracerProvider: tracing.provider })
    await expect(agent.run(TRAINS_PROMPT)).rejects.toMatchObject({ code: 'HOOK_FAILED' })
    expect(server.requests).toHaveLength(2)
    const spans = tracing.spans()
    const [run] = find(spans, 'invoke_agent trains')
    expect(run?.status.code).toBe(SpanStatusCode.ERROR)
    expect(run?.attributes).toMatchObject({
      'signalbox.run.status': 'failed',
      'error.type': 'HOOK_FAILED',
      'signalbox.error.code': 'HOOK_FAILED',
    })
    expect(run?.events.map((e) => [e.name, e.attributes?.['exception.type']])).toEqual([['exception', 'HOOK_FAILED']])
    const hooks = find(spans, 'signalbox.hook auditTrail')
    expect(hooks.map((s) => s.status.code)).toEqual([SpanStatusCode.UNSET, SpanStatusCode.ERROR])
    expect(hooks[1]?.attributes['error.type']).toBe('Error')
    // Nothing left open: every span that started has ended (and was exported).
    expect(spans.every((s) => s.ended)).toBe(true)
    expect(find(spans, 'execute_tool book_ticket')).toHaveLength(1)
  })

  it('marks a run that ran out of turns with MAX_TURNS_EXCEEDED', async () => {
    const { provider } = await scriptedModel({ [TRAINS_MODEL]: trainsScript })
    const tracing = memoryTracing()
    const agent = createTrainsAgent({ provider: provider(TRAINS_MODEL), maxTurns: 2 })
    traceAgent(agent, { tracerProvider: tracing.provider })
    await expect(agent.run(TRAINS_PROMPT)).rejects.toMatchObject({ code: 'MAX_TURNS_EXCEEDED' })
    const [run] = find(tracing.spans(), 'invoke_agent trains')
    expect(run?.attributes).toMatchObject({ 'error.type': 'MAX_TURNS_EXCEEDED', 'signalbox.run.turns': 2 })
    expect(find(tracing.spans(), 'signalbox.turn 2')).toHaveLength(1)
  })
})

describe('traceAgent: a model call retried', () => {
  it('ends the failed attempt’s span with its error code, and the retry is a span of its own', async () => {
    const script = [{ error: { status: 503, message: 'try again' } }, ...trainsScript]
    const { server, provider } = await scriptedModel({ [TRAINS_MODEL]: script })
    const tracing = memoryTracing()
    const agent = createTrainsAgent({ provider: provider(TRAINS_MODEL), retry: { baseDelayMs: 1, maxDelayMs: 1 } })
    traceAgent(agent, { tracerProvider: tracing.provider })
    await agent.run(TRAINS_PROMPT)
    server.assertDone()
    const spans = tracing.spans()
    const firstTurn = find(spans, 'signalbox.turn 1')[0]
    const attempts = find(spans, `chat ${TRAINS_MODEL}`).filter((s) => parentOf(spans, s) === firstTurn)
    expect(attempts.map((s) => [s.attributes['signalbox.model.attempt'], s.status.code, s.attributes['error.type']])).toEqual([
      [1, SpanStatusCode.ERROR, 'PROVIDER_UNAVAILABLE'],
      [2, SpanStatusCode.UNSET, undefined],
    ])
    expect(attempts[0]?.attributes['signalbox.model.retry_delay_ms']).toBeTypeOf('number')
  })
})
