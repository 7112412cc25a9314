/**
 * `signalbox run --otlp <url>` (and OTEL_EXPORTER_OTLP_ENDPOINT): the CLI exports the run's spans
 * over OTLP/HTTP; `tools serve`, `review` and `run --nats` with `--otlp` make one trace.
 */
import { afterEach, describe, expect, it } from 'vitest'
import { busArgs, cleanupAll, deleteStream, runCli, startProcess } from '../cli/support.ts'
import { tsScript } from '../support/built.ts'
import { uniquePrefix } from '../support/env.ts'
import { TEST_SERVER } from '../support/mcp/our-server.ts'
import { startOtlpReceiver } from './otlp-receiver.ts'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  // Processes a failed test left running are stopped by pid.
  await cleanupAll()
  await Promise.all(closers.splice(0).map((close) => close()))
})

const RUN = ['run', 'test/cli/fixtures/local-agent.ts', '--scripted', '--model', 'approved', '--auto', 'approve']

describe('signalbox run --otlp', { timeout: 90_000 }, () => {
  it('exports the run, its turns, model calls, tool call and approval to the URL', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const result = await runCli([...RUN, '--otlp', receiver.url], { timeoutMs: 60_000 })
    expect(result.code, result.output).toBe(0)
    const names = receiver.spans.map((s) => s.name)
    expect(names).toEqual(
      expect.arrayContaining([
        'invoke_agent local',
        'signalbox.turn 1',
        'chat approved',
        'execute_tool send_payment',
        'signalbox.approval send_payment',
      ]),
    )
    expect(new Set(receiver.spans.map((s) => s.traceId)).size).toBe(1)
    expect(new Set(receiver.spans.map((s) => s.service))).toEqual(new Set(['signalbox-local']))
    const approval = receiver.spans.find((s) => s.name === 'signalbox.approval send_payment')
    expect(approval?.attributes).toMatchObject({
      'signalbox.approval.decision': 'approved',
      'signalbox.approval.reviewer': 'auto-approve',
    })
    // Contents stay out unless --otlp-content.
    expect(JSON.stringify(receiver.spans)).not.toContain('mallory')
  })

  it('reads OTEL_EXPORTER_OTLP_ENDPOINT (the base URL, /v1/traces added), and records contents with --otlp-content', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const base = receiver.url.replace(/\/v1\/traces$/, '')
    const result = await runCli([...RUN, '--otlp-content'], { env: { OTEL_EXPORTER_OTLP_ENDPOINT: base }, timeoutMs: 60_000 })
    expect(result.code, result.output).toBe(0)
    const call = receiver.spans.find((s) => s.name === 'execute_tool send_payment')
    expect(call?.attributes).toMatchObject({
      'gen_ai.tool.call.arguments': '{"to":"mallory","amount":9000}',
      'gen_ai.tool.call.result': 'sent 9000 to mallory',
    })
  })

  it('refuses a URL that is not http(s), before running anything', async () => {
    const result = await runCli([...RUN, '--otlp', 'localhost:4318'], { timeoutMs: 60_000 })
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain('--otlp needs an http(s) URL')
  })
})

describe('signalbox tools serve / review / run --nats, each with --otlp', { timeout: 180_000 }, () => {
  it('the distributed claw machine’s three processes give one trace', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const prefix = uniquePrefix()
    closers.push(() => deleteStream(prefix))
    const bus = busArgs(prefix)
    const otlp = ['--otlp', receiver.url]
    const tools = startProcess(['tools', 'serve', 'examples/distributed/claw-tools.ts', ...bus, ...otlp], { name: 'tools' })
    const review = startProcess(
      ['review', '--name', 'tina', '--agent', 'claw', '--auto', 'approve', '--answer', 'The polar bear!', ...bus, ...otlp],
      { name: 'review' },
    )
    await Promise.all([tools.waitFor('serving ', 90_000), review.waitFor('reviewing approval requests', 90_000)])
    const agent = startProcess(['run', 'examples/distributed/claw-agent.ts', '--scripted', ...bus, ...otlp], { name: 'agent' })
    expect(await agent.exited, agent.output).toBe(0)
    expect(await tools.stop()).toBe(0)
    expect(await review.stop()).toBe(0)

    const spans = receiver.spans
    expect(new Set(spans.map((s) => s.traceId)).size).toBe(1)
    expect(new Set(spans.map((s) => s.service))).toEqual(new Set(['signalbox-claw', 'signalbox-tools', 'signalbox-review-tina']))
    const byId = new Map(spans.map((s) => [s.spanId, s]))
    const parentName = (name: string, service: string) => {
      const span = spans.find((s) => s.name === name && s.service === service)
      return span?.parentSpanId ? byId.get(span.parentSpanId)?.name : undefined
    }
    expect(parentName('execute_tool drop_claw', 'signalbox-tools')).toBe('execute_tool drop_claw')
    expect(parentName('signalbox.review drop_claw', 'signalbox-review-tina')).toBe('signalbox.approval drop_claw')
    expect(parentName('signalbox.answer', 'signalbox-review-tina')).toBe('execute_tool ask_kid')
  })
})

describe('signalbox tools serve --mcp with --otlp', { timeout: 180_000 }, () => {
  it('the MCP call is a client span under the host’s tool span, and its traceparent reaches the MCP server', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const prefix = uniquePrefix()
    closers.push(() => deleteStream(prefix))
    const bus = busArgs(prefix)
    const otlp = ['--otlp', receiver.url]
    const server = `${process.execPath} ${tsScript(TEST_SERVER).join(' ')} stdio`
    const tools = startProcess(['tools', 'serve', '--mcp', server, ...bus, ...otlp], { name: 'mcp-tools' })
    await tools.waitFor('serving ', 90_000)
    const agent = startProcess(['run', 'test/tracing/fixtures/mcp-agent.ts', '--scripted', ...bus, ...otlp], { name: 'agent' })
    expect(await agent.exited, agent.output).toBe(0)
    expect(await tools.stop()).toBe(0)

    const spans = receiver.spans
    expect(new Set(spans.map((s) => s.traceId)).size, spans.map((s) => `${s.service}: ${s.name}`).join('\n')).toBe(1)
    const hosted = spans.find((s) => s.service === 'signalbox-tools' && s.name === 'execute_tool show_meta')
    const call = spans.find((s) => s.service === 'signalbox-tools' && s.name === 'tools/call show_meta')
    expect(call?.parentSpanId).toBe(hosted?.spanId)
    expect(call?.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'network.transport': 'pipe' })
    // The server echoed the _meta it received: the client span's context.
    expect(agent.output).toContain(`00-${call?.traceId}-${call?.spanId}-01`)
  })
})
