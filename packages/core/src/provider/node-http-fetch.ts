import http from 'node:http'
import https from 'node:https'
import { Readable } from 'node:stream'
import zlib from 'node:zlib'

/**
 * The `fetch` the client `OpenAIProvider` builds sends its requests with: Node's own HTTP client
 * over keep-alive connections, answering with a standard `Response`. Node's `fetch` (undici) is
 * the largest part of a step over HTTP (its WHATWG request, controller and body machinery); over
 * `node:http` a step costs a quarter less CPU, and 0.74x the instructions on a 200-step run, with
 * the SDK unchanged above it (`docs/benchmarks.md`, "The model call's transport").
 *
 * What `fetch` does that the SDK relies on, this does too: a rejection is a `TypeError('fetch
 * failed')` with the socket's error as its cause, an abort rejects (or errors the body) with the
 * signal's reason, an event stream's body streams as it arrives, a compressed body is decoded.
 * The rest goes to `globalThis.fetch` as it is: a URL other than http(s), a body other than text
 * or bytes, and a redirect (sent to where it points, as `fetch` would).
 */
export function nodeHttpFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  // A Request, a streamed or form body, and an undici dispatcher of the caller's are fetch's.
  if (input instanceof Request || !sendable(init?.body) || (init !== undefined && 'dispatcher' in init)) {
    return globalThis.fetch(input, init)
  }
  const url = typeof input === 'string' ? new URL(input) : input
  const client = url.protocol === 'http:' ? http : url.protocol === 'https:' ? https : undefined
  if (client === undefined) return globalThis.fetch(input, init)
  const signal = init?.signal ?? undefined
  if (signal?.aborted) return Promise.reject(signal.reason)
  const payload = init?.body as string | Uint8Array | null | undefined
  const headers = headerRecord(init?.headers)
  if (payload != null)
    headers['content-length'] = String(typeof payload === 'string' ? Buffer.byteLength(payload) : payload.byteLength)
  return new Promise<Response>((resolve, reject) => {
    let settled = false
    const fail = (error: unknown) => {
      if (settled) return
      settled = true
      reject(error)
    }
    const request = client.request(url, {
      method: methodOf(init?.method),
      headers,
      agent: client === http ? httpAgent : httpsAgent,
    })
    /** The response's body while it is read or streamed: an abort errors it with the signal's reason. */
    let reading: Readable | undefined
    const onAbort = () => {
      reading?.destroy(signal!.reason)
      request.destroy(signal!.reason)
      fail(signal!.reason)
    }
    signal?.addEventListener('abort', onAbort, { once: true })
    const done = () => signal?.removeEventListener('abort', onAbort)
    request.on('error', (error) => {
      done()
      fail(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: error }))
    })
    request.once('response', (response) => {
      const status = response.statusCode ?? 0
      if (REDIRECT.has(status) && response.headers.location !== undefined && init?.redirect !== 'manual') {
        // Rare on a model endpoint: `fetch` takes it from there (and any redirect after it). 307
        // and 308 send the request again as it was; the others, as fetch does, a GET without body.
        response.resume()
        done()
        if (init?.redirect === 'error') return fail(new TypeError('fetch failed', { cause: new Error('unexpected redirect') }))
        settled = true
        const to = new URL(response.headers.location, url)
        const same = status === 307 || status === 308 || request.method === 'GET' || request.method === 'HEAD'
        resolve(globalThis.fetch(to, same ? init : { ...init, method: 'GET', body: null }))
        return
      }
      if (status < 200 || status > 599 || NO_BODY.has(status) || request.method === 'HEAD') {
        response.on('error', () => {})
        response.resume()
        done()
        if (status < 200 || status > 599)
          fail(new TypeError('fetch failed', { cause: new Error(`invalid HTTP status ${status}`) }))
        else answer(null)
        return
      }
      const body = decode(response)
      reading = body
      if (String(response.headers['content-type']).startsWith('text/event-stream')) {
        // Streamed as it arrives (the SDK reads the events one by one).
        body.once('close', done)
        answer(Readable.toWeb(body) as ReadableStream<Uint8Array>)
        return
      }
      // Anything else is read whole first (a JSON answer is parsed whole anyway): one buffer, no
      // stream machinery per chunk.
      const chunks: Buffer[] = []
      body.on('data', (chunk: Buffer) => chunks.push(chunk))
      body.once('end', () => {
        done()
        answer((chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)) as Uint8Array as ResponseBody)
      })
      body.on('error', (error) => {
        done()
        fail(signal?.aborted ? signal.reason : new TypeError('fetch failed', { cause: error }))
      })

      function answer(content: ResponseBody): void {
        if (settled) return
        settled = true
        resolve(new Response(content, { status, statusText: response.statusMessage ?? '', headers: responseHeaders(response) }))
      }
    })
    request.end(payload ?? undefined)
  })
}

/**
 * Keep-alive connections, as `fetch` keeps them. An idle socket does not hold the process open and
 * closes a second before the server's announced keep-alive timeout, so a request is not sent on a
 * connection the server is closing (Node's own default agent does the same).
 */
const AGENT_OPTIONS = { keepAlive: true, scheduling: 'lifo', timeout: 5_000 } as const
const httpAgent = new http.Agent(AGENT_OPTIONS)
const httpsAgent = new https.Agent(AGENT_OPTIONS)

type ResponseBody = ConstructorParameters<typeof Response>[0]

const REDIRECT = new Set([301, 302, 303, 307, 308])
const NO_BODY = new Set([204, 205, 304])

/** As `fetch` normalizes a method: the standard ones upper-cased, any other as given. */
const methodOf = (method: string | undefined): string =>
  method === undefined ? 'GET' : STANDARD_METHODS.has(method.toUpperCase()) ? method.toUpperCase() : method
const STANDARD_METHODS = new Set(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'POST', 'PUT'])

const sendable = (body: unknown): boolean => body == null || typeof body === 'string' || body instanceof Uint8Array

function headerRecord(headers: ConstructorParameters<typeof Headers>[0]): Record<string, string> {
  const record: Record<string, string> = {}
  if (headers === undefined) return record
  // The SDK hands a `Headers`; anything else a fetch accepts is read the same way.
  const all = headers instanceof Headers ? headers : new Headers(headers)
  all.forEach((value, name) => {
    record[name] = value
  })
  return record
}

function responseHeaders(response: http.IncomingMessage): Headers {
  const headers = new Headers()
  const raw = response.rawHeaders
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!)
  return headers
}

/** The body decoded as `fetch` decodes it (gzip, deflate, br); an unknown coding stays as it came. */
function decode(response: http.IncomingMessage): Readable {
  const coding = response.headers['content-encoding']?.trim().toLowerCase()
  const decoder =
    coding === 'gzip' || coding === 'x-gzip'
      ? zlib.createGunzip()
      : coding === 'deflate'
        ? zlib.createInflate()
        : coding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined
  if (decoder === undefined) return response
  response.on('error', (error) => decoder.destroy(error))
  return response.pipe(decoder)
}

/**
 * Whether `OpenAIProvider`'s default transport may be `nodeHttpFetch`: not when the process routes
 * `fetch` through a proxy (an undici global dispatcher other than Node's own `Agent`, or Node's
 * `NODE_USE_ENV_PROXY`), which `node:http` would bypass. Those processes keep `globalThis.fetch`.
 */
export function fetchIsRouted(): boolean {
  if (process.env.NODE_USE_ENV_PROXY) return true
  const dispatcher = (globalThis as Record<symbol, unknown>)[GLOBAL_DISPATCHER]
  return dispatcher !== undefined && (dispatcher as { constructor?: { name?: string } }).constructor?.name !== 'Agent'
}

const GLOBAL_DISPATCHER = Symbol.for('undici.globalDispatcher.1')
