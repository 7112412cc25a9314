import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One span as it arrived over OTLP/HTTP (JSON), with the service that sent it. */
export interface ReceivedSpan {
  service: string
  traceId: string
  spanId: string
  parentSpanId: string | undefined
  name: string
  kind: number
  attributes: Record<string, unknown>
}

interface OtlpValue {
  stringValue?: string
  intValue?: string | number
  boolValue?: boolean
  doubleValue?: number
  arrayValue?: { values?: OtlpValue[] }
}
interface OtlpAttribute {
  key: string
  value: OtlpValue
}
interface OtlpTraces {
  resourceSpans?: {
    resource?: { attributes?: OtlpAttribute[] }
    scopeSpans?: {
      spans?: {
        traceId: string
        spanId: string
        parentSpanId?: string
        name: string
        kind: number
        attributes?: OtlpAttribute[]
      }[]
    }[]
  }[]
}

/** An OTLP/HTTP trace receiver (JSON) on a free port: what the exporters of the test's processes send to. */
export async function startOtlpReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = []
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      if (
        request.method !== 'POST' ||
        request.url !== '/v1/traces' ||
        !String(request.headers['content-type']).includes('json')
      ) {
        response.writeHead(415).end()
        return
      }
      spans.push(...decode(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpTraces))
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

function decode(body: OtlpTraces): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributes(resourceSpans.resource?.attributes)
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        service: String(resource['service.name']),
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId || undefined,
        name: span.name,
        kind: span.kind,
        attributes: attributes(span.attributes),
      })),
    )
  })
}

function attributes(list: OtlpAttribute[] | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, decodeValue(value)]))
}

function decodeValue(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue
  if (value.intValue !== undefined) return Number(value.intValue)
  if (value.boolValue !== undefined) return value.boolValue
  if (value.doubleValue !== undefined) return value.doubleValue
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(decodeValue)
  return undefined
}
