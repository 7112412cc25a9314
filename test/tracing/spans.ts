import { context, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'

/** A real SDK tracer provider exporting to memory, and the span tree it recorded. */
export function memoryTracing() {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  return { exporter, provider, spans: () => exporter.getFinishedSpans() }
}

/** Registers the provider and an AsyncLocalStorage context manager globally; returns the undo. */
export function registerGlobally(provider: BasicTracerProvider): () => void {
  const manager = new AsyncLocalStorageContextManager().enable()
  context.setGlobalContextManager(manager)
  trace.setGlobalTracerProvider(provider)
  return () => {
    trace.disable()
    context.disable()
    manager.disable()
  }
}

export interface SpanNode {
  span: ReadableSpan
  name: string
  children: SpanNode[]
}

/** The spans as trees (roots: spans whose parent is not among them), children in start order. */
export function spanTree(spans: readonly ReadableSpan[]): SpanNode[] {
  const nodes = new Map<string, SpanNode>()
  for (const span of spans) nodes.set(span.spanContext().spanId, { span, name: span.name, children: [] })
  const roots: SpanNode[] = []
  const byStart = (a: SpanNode, b: SpanNode) => hr(a.span.startTime) - hr(b.span.startTime)
  for (const node of nodes.values()) {
    const parent = node.span.parentSpanContext?.spanId
    const parentNode = parent === undefined ? undefined : nodes.get(parent)
    if (parentNode) parentNode.children.push(node)
    else roots.push(node)
  }
  for (const node of nodes.values()) node.children.sort(byStart)
  return roots.sort(byStart)
}

/** The tree as indented names, one span a line: easy to read in a failing assertion. */
export function outline(nodes: readonly SpanNode[], depth = 0): string[] {
  return nodes.flatMap((node) => [`${'  '.repeat(depth)}${node.name}`, ...outline(node.children, depth + 1)])
}

export function find(spans: readonly ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((span) => span.name === name)
}

export function parentOf(spans: readonly ReadableSpan[], span: ReadableSpan): ReadableSpan | undefined {
  const id = span.parentSpanContext?.spanId
  return spans.find((candidate) => candidate.spanContext().spanId === id)
}

function hr(time: [number, number]): number {
  return time[0] * 1e9 + time[1]
}
