import { context, createTraceState, ROOT_CONTEXT, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { type BusMessage, createInProcessBus } from '@signalbox/core/bus'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseTraceparent, withTraceContext } from '../src/index.ts'

const manager = new AsyncLocalStorageContextManager()
beforeAll(() => {
  context.setGlobalContextManager(manager.enable())
})
afterAll(() => {
  context.disable()
  manager.disable()
})

const exporter = new InMemorySpanExporter()
const tracer = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).getTracer('test')

function received(bus: ReturnType<typeof withTraceContext>, subject: string) {
  return new Promise<{ message: BusMessage; active: ReturnType<typeof trace.getActiveSpan> }>((resolve) => {
    bus.subscribe(subject, (message) => resolve({ message, active: trace.getActiveSpan() }))
  })
}

describe('withTraceContext', () => {
  it('sends the active span as traceparent/tracestate and runs the handler in that context', async () => {
    const bus = withTraceContext(createInProcessBus())
    const got = received(bus, 't.a')
    // A span under a remote parent that carried vendor state: the state travels on.
    const remote = trace.setSpanContext(ROOT_CONTEXT, {
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
      isRemote: true,
      traceState: createTraceState('vendor=x'),
    })
    const span = tracer.startSpan('sender', {}, remote)
    context.with(trace.setSpan(remote, span), () => bus.publish('t.a', 'hello', { headers: { other: 'kept' } }))
    const { message, active } = await got
    const { traceId, spanId } = span.spanContext()
    expect(traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736')
    expect(message.headers).toEqual({ other: 'kept', traceparent: `00-${traceId}-${spanId}-01`, tracestate: 'vendor=x' })
    expect(active?.spanContext()).toMatchObject({ traceId, spanId, isRemote: true })
    span.end()
    await bus.close()
  })

  it('carries it on requests and durable publishes too', async () => {
    const bus = withTraceContext(createInProcessBus())
    const seen: (string | undefined)[] = []
    bus.subscribe('t.req', (message) => {
      seen.push(trace.getActiveSpan()?.spanContext().traceId)
      message.respond('ok')
    })
    const durable = new Promise<string | undefined>((resolve) => {
      bus.durableConsume('t.durable', (message) => {
        message.ack()
        resolve(trace.getActiveSpan()?.spanContext().traceId)
      })
    })
    const span = tracer.startSpan('sender')
    await context.with(trace.setSpan(ROOT_CONTEXT, span), async () => {
      await bus.request('t.req', 'x', { timeoutMs: 2_000 })
      await bus.durablePublish('t.durable', 'y', { msgId: 'one' })
    })
    expect(seen).toEqual([span.spanContext().traceId])
    expect(await durable).toBe(span.spanContext().traceId)
    span.end()
    await bus.close()
  })

  it('adds nothing outside a span, and leaves messages without trace headers alone', async () => {
    const bus = withTraceContext(createInProcessBus())
    const got = received(bus, 't.none')
    bus.publish('t.none', 'plain')
    const { message, active } = await got
    expect(message.headers).toBeUndefined()
    expect(active).toBeUndefined()
    await bus.close()
  })

  it('ignores a malformed traceparent (a foreign client may send anything)', async () => {
    const raw = createInProcessBus()
    const bus = withTraceContext(raw)
    const got = received(bus, 't.bad')
    raw.publish('t.bad', 'x', { headers: { traceparent: '00-zz-not-a-trace' } })
    expect((await got).active).toBeUndefined()
    await bus.close()
  })

  it('keeps the transport’s own members reachable', () => {
    const raw = createInProcessBus()
    const bus = withTraceContext(raw)
    expect(bus.name).toBe(raw.name)
    expect(bus.maxPayload).toBe(raw.maxPayload)
  })
})

describe('parseTraceparent', () => {
  const id = '4bf92f3577b34da6a3ce929d0e0e4736'
  it('accepts the W3C form and refuses the rest', () => {
    expect(parseTraceparent(`00-${id}-00f067aa0ba902b7-01`)).toMatchObject({
      traceId: id,
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
    })
    expect(parseTraceparent(`00-${'0'.repeat(32)}-00f067aa0ba902b7-01`)).toBeUndefined()
    expect(parseTraceparent(`ff-${id}-00f067aa0ba902b7-01`)).toBeUndefined()
    expect(parseTraceparent(`00-${id}-00f067aa0ba902b7-01-extra`)).toBeUndefined()
    expect(parseTraceparent(`01-${id}-00f067aa0ba902b7-01-future`)).toMatchObject({ traceId: id })
    expect(parseTraceparent('garbage')).toBeUndefined()
  })
})
