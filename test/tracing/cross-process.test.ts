/**
 * (Process start-up takes seconds on a busy machine: the timeouts are generous; nothing
 * here is timed.)
 *
 * One trace across real processes over NATS: the agent, a tool host and a reviewer service, each
 * its own Node process (see `tsScript`), each exporting with the OTLP/HTTP exporter to a receiver started here.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { cleanupServer, start } from '../system/support.ts'
import { type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.ts'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

function one(spans: ReceivedSpan[], service: string, name: string): ReceivedSpan {
  const found = spans.filter((s) => s.service === service && s.name === name)
  expect(found, `${service}: ${name} in\n${spans.map((s) => `${s.service}: ${s.name}`).join('\n')}`).toHaveLength(1)
  return found[0] as ReceivedSpan
}

describe('trace context over NATS (traceparent in message headers)', () => {
  it('joins the tool host’s and the reviewer’s spans to the agent’s trace, under the right parents', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const prefix = uniquePrefix()
    cleanupServer(prefix)
    const env = { NATS_URL, PREFIX: prefix, OTLP_URL: receiver.url }
    const toolHost = start(['test/tracing/fixtures/tool-host.ts'], env)
    const reviewer = start(['test/tracing/fixtures/reviewer.ts'], env)
    await Promise.all([toolHost.waitFor('TOOL_HOST_READY', 60_000), reviewer.waitFor('REVIEWER_READY', 60_000)])

    const agent = start(['test/tracing/fixtures/agent.ts'], env)
    await agent.waitFor(/RUN_DONE \S+ done/, 60_000)
    expect((await agent.exited).code).toBe(0)
    toolHost.kill('SIGTERM')
    reviewer.kill('SIGTERM')
    expect((await toolHost.exited).code).toBe(0)
    expect((await reviewer.exited).code).toBe(0)

    const spans = receiver.spans
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['agent', 'tool-host', 'reviewer']))
    // One trace, whatever process a span came from.
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1)

    const run = one(spans, 'agent', 'invoke_agent claw')
    expect(run.parentSpanId).toBeUndefined()
    for (const tool of ['move_claw', 'drop_claw']) {
      const call = one(spans, 'agent', `execute_tool ${tool}`)
      const hosted = one(spans, 'tool-host', `execute_tool ${tool}`)
      expect(hosted.parentSpanId).toBe(call.spanId)
      expect(hosted.kind).toBe(2) // SERVER
      expect(hosted.attributes).toMatchObject({
        'gen_ai.tool.name': tool,
        'gen_ai.tool.call.id': call.attributes['gen_ai.tool.call.id'],
      })
    }
    const approval = one(spans, 'agent', 'signalbox.approval drop_claw')
    expect(approval.parentSpanId).toBe(one(spans, 'agent', 'execute_tool drop_claw').spanId)
    expect(approval.attributes).toMatchObject({
      'signalbox.approval.decision': 'approved',
      'signalbox.approval.reviewer': 'reviewer-service',
    })
    const review = one(spans, 'reviewer', 'signalbox.review drop_claw')
    expect(review.parentSpanId).toBe(approval.spanId)
    expect(review.attributes).toMatchObject({
      'signalbox.approval.decision': 'approved',
      'signalbox.run.id': run.attributes['signalbox.run.id'],
    })
  }, 150_000)
})

describe('trace context over NATS: a delegated child run on another host', () => {
  it('starts the hosted child run as a child of the parent’s delegating tool call', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const prefix = uniquePrefix()
    cleanupServer(prefix)
    const env = { NATS_URL, PREFIX: prefix, OTLP_URL: receiver.url }
    const host = start(['test/tracing/fixtures/child-host.ts'], env)
    await host.waitFor('CHILD_HOST_READY', 60_000)
    const parent = start(['test/tracing/fixtures/planner.ts'], env)
    await parent.waitFor(/RUN_DONE \S+ done/, 60_000)
    expect((await parent.exited).code).toBe(0)
    host.kill('SIGTERM')
    expect((await host.exited).code).toBe(0)

    const spans = receiver.spans
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1)
    const root = one(spans, 'planner', 'invoke_agent planner')
    const delegation = one(spans, 'planner', 'execute_tool ask_stocker')
    const child = one(spans, 'child-host', 'invoke_agent stocker')
    expect(child.parentSpanId).toBe(delegation.spanId)
    expect(child.attributes).toMatchObject({
      'signalbox.run.parent_id': root.attributes['signalbox.run.id'],
      'signalbox.run.path': [root.attributes['signalbox.run.id']],
      'signalbox.run.status': 'done',
    })
    // The child's own turn and model call hang under it, on its host.
    const turn = one(spans, 'child-host', 'signalbox.turn 1')
    expect(turn.parentSpanId).toBe(child.spanId)
    expect(one(spans, 'child-host', 'chat stocker').parentSpanId).toBe(turn.spanId)
  }, 150_000)
})
