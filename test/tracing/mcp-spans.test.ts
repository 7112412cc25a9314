/**
 * MCP client spans and trace context in `params._meta`, per the OpenTelemetry MCP conventions,
 * against our own MCP server process over stdio and Streamable HTTP; spans exported with the real
 * OTLP/HTTP exporter to the suite's receiver.
 */
import { context } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { createAgent } from '@signalbox/core'
import { mcpTools } from '@signalbox/mcp'
import { traceAgent, traceMcp } from '@signalbox/otel'
import { afterEach, describe, expect, it } from 'vitest'
import { scriptedModel } from '../e2e/support/scripted.ts'
import { ourServer, TRANSPORTS, type Transport } from '../support/mcp/our-server.ts'
import { type ReceivedSpan, startOtlpReceiver } from './otlp-receiver.ts'

const closers: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close()
})

function one(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((s) => s.name === name)
  expect(found, `${name} in\n${spans.map((s) => s.name).join('\n')}`).toHaveLength(1)
  return found[0] as ReceivedSpan
}

describe.each(TRANSPORTS)('traceMcp over %s', (transport: Transport) => {
  it('a CLIENT span per request under the agent’s tool call, its traceparent in params._meta, errors by class', async () => {
    const receiver = await startOtlpReceiver()
    closers.push(receiver.close)
    const tracerProvider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'mcp-client' }),
      spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: receiver.url }))],
    })
    const manager = new AsyncLocalStorageContextManager().enable()
    context.setGlobalContextManager(manager)
    closers.push(async () => {
      await tracerProvider.shutdown()
      context.disable()
      manager.disable()
    })

    const { server } = await ourServer(transport)
    const toolset = mcpTools({ ...server, name: 'ours' })
    closers.push(() => toolset.close())
    traceMcp(toolset, { tracerProvider, captureContent: true })
    const { provider } = await scriptedModel({
      '*': [
        { toolCalls: [{ id: 'c1', name: 'show_meta', arguments: {} }] },
        { toolCalls: [{ id: 'c2', name: 'out_of_stock', arguments: {} }] },
        { toolCalls: [{ id: 'c3', name: 'crash', arguments: {} }] },
        { content: 'done' },
      ],
    })
    const agent = createAgent({ provider: provider('m'), tools: await toolset.tools() })
    traceAgent(agent, { tracerProvider })
    const result = await agent.run('show me the meta')
    await tracerProvider.forceFlush()
    const spans = receiver.spans

    const call = one(spans, 'tools/call show_meta')
    const tool = one(spans, 'execute_tool show_meta')
    expect(call.kind).toBe(3) // CLIENT
    expect(call.parentSpanId).toBe(tool.spanId)
    expect(call.traceId).toBe(tool.traceId)
    expect(call.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'show_meta',
      'jsonrpc.request.id': expect.stringMatching(/^\d+$/),
      'mcp.protocol.version': expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
      'network.transport': transport === 'http' ? 'tcp' : 'pipe',
      'gen_ai.tool.call.arguments': '{}',
    })
    if (transport === 'http') {
      expect(call.attributes).toMatchObject({
        'network.protocol.name': 'http',
        'mcp.session.id': expect.any(String),
        'server.address': '127.0.0.1',
        'server.port': Number(new URL((server as { url: string }).url).port),
      })
    }
    // What the server received in params._meta: the MCP span's own context.
    const meta = JSON.parse(String(result.messages.find((m) => m.role === 'tool' && m.tool_call_id === 'c1')?.content)) as Record<
      string,
      string
    >
    expect(meta.traceparent).toBe(`00-${call.traceId}-${call.spanId}-01`)

    expect(one(spans, 'tools/call out_of_stock').attributes['error.type']).toBe('tool_error')
    expect(one(spans, 'tools/call crash').attributes).toMatchObject({
      'error.type': '-32603',
      'rpc.response.status_code': '-32603',
    })
    // The listing is a request of its own, outside any run.
    expect(one(spans, 'tools/list').attributes['mcp.method.name']).toBe('tools/list')
  })
})
