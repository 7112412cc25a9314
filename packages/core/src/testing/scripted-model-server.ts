/**
 * A scripted, OpenAI-compatible chat-completions endpoint on localhost: real HTTP and the real
 * wire format (JSON and SSE), answers from scripts, loud about anything the script did not plan.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { completionBody, completionStream, errorBody, toRecordedRequest } from './openai-wire.ts'
import { isErrorStep, type RecordedRequest, resolveReply, type Scripts, sleep } from './script.ts'
import { ScriptRunner } from './script-runner.ts'

export interface ScriptedModelServerOptions {
  scripts: Scripts
  /** Default 0: any free port. */
  port?: number
  /** Default `127.0.0.1`. */
  host?: string
  /** Aborting it closes the server. */
  signal?: AbortSignal
  /**
   * How long an idle keep-alive connection stays open (default: node's 5 s). Clients close theirs
   * a second before the advertised timeout; on a loaded machine their timer can fire late and
   * reuse a socket the server is closing, so a long-lived server (the bench's) raises it.
   */
  keepAliveTimeoutMs?: number
}

export interface ScriptedModelServer {
  /** `http://host:port/v1`: the `baseURL` for the openai SDK. */
  readonly url: string
  /** Every parsed chat-completions request, in arrival order. */
  readonly requests: RecordedRequest[]
  requestsFor(model: string): RecordedRequest[]
  /** Unexpected requests (exhausted script, unknown model, failed `expect`, responder threw). */
  readonly failures: Error[]
  /** Throws listing unconsumed steps per model and every failure. */
  assertDone(): void
  /** Forget requests and failures; restart the scripts (or replace them). */
  reset(scripts?: Scripts): void
  close(): Promise<void>
}

export async function startScriptedModelServer(options: ScriptedModelServerOptions): Promise<ScriptedModelServer> {
  const runner = new ScriptRunner(options.scripts)
  const requests: RecordedRequest[] = []
  let callIds = 0
  let completionIds = 0
  const nextCallId = () => `call_${++callIds}`

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, errorBody({ status: 500, message: `scripted model: ${String(error)}`, type: 'scripted_model_error' }))
      else res.destroy()
    })
  })

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?', 1)[0]
    if (req.method === 'GET' && path === '/v1/models') {
      const created = Math.floor(Date.now() / 1000)
      const data = runner.keys().map((id) => ({ id, object: 'model', created, owned_by: 'signalbox-scripted' }))
      return sendJson(res, 200, JSON.stringify({ object: 'list', data }))
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      req.resume()
      return sendJson(
        res,
        404,
        errorBody({ status: 404, message: `scripted model: unknown route ${req.method} ${path}`, code: 'unknown_url' }),
      )
    }

    let body: unknown
    try {
      body = JSON.parse(await readBody(req))
    } catch {
      return sendJson(res, 400, errorBody({ status: 400, message: 'scripted model: request body is not valid JSON' }))
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      return sendJson(res, 400, errorBody({ status: 400, message: 'scripted model: request body must be a JSON object' }))
    }
    const request = toRecordedRequest(body as Record<string, unknown>, flattenHeaders(req))
    requests.push(request)

    let outcome = runner.next(request)
    if (outcome instanceof Promise) outcome = await outcome
    if (!outcome.ok) {
      // 500 so clients see a failed call; x-should-retry stops the SDK from retrying it away.
      return sendJson(
        res,
        500,
        errorBody({ status: 500, message: outcome.error.message, type: 'scripted_model_error', code: outcome.error.code }),
        {
          'x-should-retry': 'false',
        },
      )
    }
    const step = outcome.step
    if (step.delayMs && step.delayMs > 0 && !(await delay(step.delayMs, res))) return
    if (isErrorStep(step)) return sendJson(res, step.error.status, errorBody(step.error), step.headers)

    const reply = resolveReply(step, request, nextCallId)
    const id = `chatcmpl-scripted${++completionIds}`
    if (!request.stream) return sendJson(res, 200, completionBody(id, request.model, reply))
    const streamOptions = (body as { stream_options?: { include_usage?: unknown } }).stream_options
    const payload = completionStream(id, request.model, reply, streamOptions?.include_usage === true)
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      'content-length': Buffer.byteLength(payload),
    })
    res.end(payload)
  }

  /** Waits `ms`; false (socket destroyed) when the client left or the server closed meanwhile. */
  async function delay(ms: number, res: ServerResponse): Promise<boolean> {
    if (!res.socket || res.socket.destroyed) return false
    const controller = new AbortController()
    const onClose = () => controller.abort()
    res.once('close', onClose)
    try {
      await sleep(ms, controller.signal)
      return true
    } catch {
      res.destroy()
      return false
    } finally {
      res.off('close', onClose)
    }
  }

  if (options.keepAliveTimeoutMs !== undefined) server.keepAliveTimeout = options.keepAliveTimeoutMs
  const listening = new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  await listening

  let closed: Promise<void> | undefined
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve())
      // Destroys keep-alive and in-flight sockets too; a pending delay sees its response close.
      server.closeAllConnections()
    })
    return closed
  }
  if (options.signal) {
    if (options.signal.aborted) void close()
    else options.signal.addEventListener('abort', () => void close(), { once: true })
  }

  const address = server.address() as AddressInfo
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address
  return {
    url: `http://${host}:${address.port}/v1`,
    requests,
    requestsFor: (model) => requests.filter((r) => r.model === model),
    failures: runner.failures,
    assertDone: () => runner.assertDone(),
    reset(scripts) {
      requests.length = 0
      if (scripts) runner.load(scripts)
      else runner.reset()
    },
    close,
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () =>
      resolve(chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks).toString('utf8')),
    )
    req.on('error', reject)
  })
}

function flattenHeaders(req: IncomingMessage): Record<string, string> {
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers[name] = Array.isArray(value) ? value.join(', ') : value
  }
  return headers
}

function sendJson(res: ServerResponse, status: number, body: string, extraHeaders?: Record<string, string>): void {
  res.writeHead(status, { ...extraHeaders, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
  res.end(body)
}
