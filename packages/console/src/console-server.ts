/**
 * The console's HTTP side, on Node's own `http` (five routes need no framework): the page, its
 * script, one SSE stream per page for live updates, and small JSON endpoints for the actions.
 * Every action needs the per-server token the page was served with, so another site open in the
 * same browser cannot post decisions to localhost.
 */
import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { AUDIT_KINDS, ErrorCode, SignalboxError } from '@signalbox/core'
import { describeError } from '@signalbox/core/internal'
import { z } from 'zod/v4'
import type { ChartLayout } from './chart-graph.ts'
import { type ConsoleHub, ConsoleRequestError, type DecideResult } from './console-hub.ts'
import { pageHtml } from './page-html.ts'
import type { ServerMessage } from './view-model.ts'

export interface ConsoleServerOptions {
  hub: ConsoleHub
  chart: ChartLayout
  script: string
  port: number
  host: string
  now: () => number
}

export interface ConsoleServer {
  readonly url: string
  readonly port: number
  close(): Promise<void>
}

const MAX_BODY_BYTES = 64 * 1024
const LOCAL_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i
const HEARTBEAT_MS = 15_000
const TEXT_LIMIT = 8_000

const DecisionBody = z.object({
  approved: z.boolean(),
  reason: z.string().max(TEXT_LIMIT).optional(),
  /** Approve with edited arguments. */
  arguments: z.unknown().optional(),
})
const AnswerBody = z.object({ answer: z.string().trim().min(1).max(TEXT_LIMIT) })
const SteerBody = z.object({ text: z.string().trim().min(1).max(TEXT_LIMIT) })
const CancelBody = z.object({ reason: z.string().max(TEXT_LIMIT).optional() })

export async function startConsoleServer(options: ConsoleServerOptions): Promise<ConsoleServer> {
  const { hub } = options
  const token = randomBytes(18).toString('base64url')
  const streams = new Set<ServerResponse>()
  const local = ['127.0.0.1', 'localhost', '::1'].includes(options.host)

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    // A page on another site that rebinds its DNS name to 127.0.0.1 would be same-origin with us:
    // only answer requests addressed to this machine by a local name.
    if (local && !LOCAL_HOST.test(request.headers.host ?? ''))
      return json(response, 403, { error: { code: 'FORBIDDEN', message: 'the console answers local host names only' } })
    const url = new URL(request.url ?? '/', 'http://console')
    const path = url.pathname
    if (request.method === 'GET' && path === '/') {
      return send(response, 200, 'text/html; charset=utf-8', pageHtml({ token, reviewer: hub.reviewer }))
    }
    if (request.method === 'GET' && path === '/app.js') {
      return send(response, 200, 'text/javascript; charset=utf-8', options.script)
    }
    if (request.method === 'GET' && path === '/events') return openStream(response)
    if (request.method !== 'POST') return json(response, 404, { error: { code: 'NOT_FOUND', message: 'no such page' } })
    if (request.headers['x-signalbox-console'] !== token)
      return json(response, 403, { error: { code: 'FORBIDDEN', message: 'missing or wrong console token' } })
    const body = await readJson(request)
    const route = /^\/api\/(approvals|questions|runs)\/([^/]+)(?:\/(steer|cancel))?$/.exec(path)
    if (!route) return json(response, 404, { error: { code: 'NOT_FOUND', message: 'no such action' } })
    const [, collection, rawId = '', action] = route
    const id = decodeURIComponent(rawId)
    if (collection === 'approvals' && !action) {
      const verdict = DecisionBody.parse(body)
      const reason = verdict.reason?.trim()
      return decided(
        response,
        hub.decide(id, {
          approved: verdict.approved,
          ...(reason ? { reason } : {}),
          ...(verdict.arguments === undefined ? {} : { arguments: verdict.arguments }),
        }),
      )
    }
    if (collection === 'questions' && !action) return decided(response, hub.answer(id, AnswerBody.parse(body).answer))
    if (collection === 'runs' && action === 'steer') {
      await hub.steer(id, SteerBody.parse(body).text, AbortSignal.timeout(10_000))
      return json(response, 200, { ok: true })
    }
    if (collection === 'runs' && action === 'cancel') {
      const reason = CancelBody.parse(body).reason?.trim()
      const cancelled = await hub.cancel(id, reason || undefined, AbortSignal.timeout(10_000))
      return json(response, 200, { ok: true, cancelled })
    }
    return json(response, 404, { error: { code: 'NOT_FOUND', message: 'no such action' } })
  }

  const openStream = (response: ServerResponse) => {
    response.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
    })
    const write = (message: ServerMessage) => response.write(`data: ${JSON.stringify(message)}\n\n`)
    write({
      type: 'hello',
      reviewer: hub.reviewer,
      auditKinds: [...AUDIT_KINDS],
      includeContents: hub.includeContents,
      now: options.now(),
      chart: options.chart,
      ...hub.snapshot(),
    })
    const unsubscribe = hub.subscribe(write)
    streams.add(response)
    response.on('close', () => {
      unsubscribe()
      streams.delete(response)
    })
  }

  const server = createServer((request, response) => {
    handle(request, response).catch((error) => {
      if (response.headersSent) return response.end()
      if (error instanceof z.ZodError)
        return json(response, 400, { error: { code: 'BAD_REQUEST', message: z.prettifyError(error) } })
      if (ConsoleRequestError.is(error)) return json(response, 404, { error: { code: error.code, message: error.message } })
      if (BodyError.is(error)) return json(response, 400, { error: { code: error.code, message: error.message } })
      json(response, 502, { error: { code: 'BUS_ERROR', message: describeError(error) } })
    })
  })
  const heartbeat = setInterval(() => {
    for (const stream of streams) stream.write(': keep-alive\n\n')
  }, HEARTBEAT_MS)
  heartbeat.unref()

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const port = (server.address() as AddressInfo).port
  const shownHost = options.host === '127.0.0.1' || options.host === '::1' ? 'localhost' : options.host
  return {
    url: `http://${shownHost}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(heartbeat)
        for (const stream of streams) stream.end()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

function decided(response: ServerResponse, result: DecideResult): void {
  if (result.ok) {
    json(response, 200, { ok: true })
    return
  }
  const by = result.settled
    ? `${result.settled.outcome}${result.settled.by ? ` by ${result.settled.by}` : ''}`
    : 'no longer pending'
  json(response, 409, { error: { code: result.code, message: `already settled: ${by}` }, settled: result.settled })
}

class BodyError extends SignalboxError {
  constructor(message: string) {
    super(ErrorCode.BAD_REQUEST, message, { fault: 'user' })
  }
}

async function readJson(request: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of request) {
    size += (chunk as Buffer).byteLength
    if (size > MAX_BODY_BYTES) throw new BodyError(`body larger than ${MAX_BODY_BYTES} bytes`)
    chunks.push(chunk as Buffer)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}')
  } catch {
    throw new BodyError('body is not JSON')
  }
}

/**
 * Only the page's own script runs: no inline script, no `eval`/`new Function` (the page's validator
 * is chosen to need neither), no other origin. Styles are inline (`<style>`, SVG attributes).
 */
const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

function send(response: ServerResponse, status: number, type: string, body: string): void {
  response.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'content-security-policy': CONTENT_SECURITY_POLICY,
  })
  response.end(body)
}

function json(response: ServerResponse, status: number, body: unknown): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(body))
}
