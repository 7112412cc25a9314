import { once } from 'node:events'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import { OpenAIProvider } from '@signalbox/core'
import { startScriptedModelServer } from '@signalbox/core/testing'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { fetchIsRouted, nodeHttpFetch } from '../../src/provider/node-http-fetch.ts'

/**
 * The client `OpenAIProvider` builds sends its requests over `node:http` (`nodeHttpFetch`): each
 * of `fetch`'s behaviours the SDK relies on, against a real server.
 */
const open: { close(): unknown }[] = []
afterEach(async () => {
  vi.unstubAllEnvs()
  await Promise.all(open.splice(0).map((s) => s.close()))
})
/** Where undici (Node's `fetch`) keeps the process's dispatcher; `setGlobalDispatcher` writes it. */
const DISPATCHER = Symbol.for('undici.globalDispatcher.1')
const globals = globalThis as Record<symbol, unknown>

/** Runs `body` with `dispatcher` as the process's fetch dispatcher, then puts Node's back. */
function withDispatcher(dispatcher: unknown, body: () => void): void {
  const had = Object.hasOwn(globals, DISPATCHER)
  const before = globals[DISPATCHER]
  globals[DISPATCHER] = dispatcher
  try {
    body()
  } finally {
    if (had) globals[DISPATCHER] = before
    else delete globals[DISPATCHER]
  }
}

interface Seen {
  method: string
  url: string
  headers: IncomingMessage['headers']
  body: string
}

/** A server answering with `handle`; records each request and counts connections. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse, seen: Seen) => void) {
  const seen: Seen[] = []
  let connections = 0
  const server: Server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      const request = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body }
      seen.push(request)
      handle(req, res, request)
    })
  })
  server.on('connection', () => connections++)
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  open.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) })
  open.push({ close: () => server.closeAllConnections() })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, connections: () => connections }
}

describe('nodeHttpFetch', () => {
  it('sends the method, headers and body, and answers with status, headers and body', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(201, 'Made', { 'content-type': 'application/json', 'set-cookie': ['a=1', 'b=2'], 'x-request-id': 'r1' })
      res.end(JSON.stringify({ ok: true }))
    })
    const body = JSON.stringify({ messages: ['héllo'] })
    const response = await nodeHttpFetch(`${server.url}/v1/chat`, {
      method: 'POST',
      headers: new Headers({ 'content-type': 'application/json', authorization: 'Bearer k' }),
      body,
    })
    expect(response.status).toBe(201)
    expect(response.statusText).toBe('Made')
    expect(response.ok).toBe(true)
    expect(response.headers.get('x-request-id')).toBe('r1')
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
    expect(await response.json()).toEqual({ ok: true })
    expect(server.seen[0]).toMatchObject({ method: 'POST', url: '/v1/chat', body })
    expect(server.seen[0]?.headers).toMatchObject({
      authorization: 'Bearer k',
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
    })
  })

  it('keeps the connection alive from one request to the next', async () => {
    const server = await serve((_req, res) => res.end('ok'))
    for (let i = 0; i < 3; i++)
      expect(await (await nodeHttpFetch(`${server.url}/`, { method: 'POST', body: 'x' })).text()).toBe('ok')
    expect(server.connections()).toBe(1)
  })

  it('takes a new connection when the server closed the idle one', async () => {
    const server = await serve((_req, res) => {
      res.setHeader('connection', 'close')
      res.end('ok')
    })
    expect(await (await nodeHttpFetch(`${server.url}/`)).text()).toBe('ok')
    expect(await (await nodeHttpFetch(`${server.url}/`)).text()).toBe('ok')
    expect(server.connections()).toBe(2)
  })

  it('streams an event stream as it arrives', async () => {
    let finish: () => void = () => {}
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: first\n\n')
      finish = () => res.end('data: second\n\n')
    })
    const response = await nodeHttpFetch(`${server.url}/`, { method: 'POST', body: '{}' })
    const reader = response.body!.getReader()
    // The first event is read while the server still holds the second.
    expect(Buffer.from((await reader.read()).value!).toString()).toBe('data: first\n\n')
    finish()
    expect(Buffer.from((await reader.read()).value!).toString()).toBe('data: second\n\n')
    expect((await reader.read()).done).toBe(true)
  })

  it.each([
    ['gzip', gzipSync],
    ['br', brotliCompressSync],
  ])('decodes a %s body', async (coding, compress) => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': coding })
      res.end(compress(Buffer.from('{"packed":true}')))
    })
    expect(await (await nodeHttpFetch(`${server.url}/`)).json()).toEqual({ packed: true })
  })

  it('answers 204 with no body', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(204)
      res.end()
    })
    const response = await nodeHttpFetch(`${server.url}/`, { method: 'DELETE' })
    expect(response.status).toBe(204)
    expect(response.body).toBeNull()
  })

  it.each([
    [307, 'POST /new payload'],
    [308, 'POST /new payload'],
    [303, 'GET /new '],
    [302, 'GET /new '],
  ])('follows a %i redirect as fetch does', async (status, followed) => {
    const server = await serve((req, res, seen) => {
      if (req.url === '/old') {
        res.writeHead(status, { location: '/new' })
        res.end()
      } else res.end(`moved: ${seen.body}`)
    })
    const response = await nodeHttpFetch(`${server.url}/old`, { method: 'POST', body: 'payload' })
    expect(response.status).toBe(200)
    expect(server.seen.map((s) => `${s.method} ${s.url} ${s.body}`)).toEqual(['POST /old payload', followed])
  })

  it("answers a redirect itself with redirect: 'manual', and rejects it with redirect: 'error'", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(302, { location: '/new' })
      res.end()
    })
    const manual = await nodeHttpFetch(`${server.url}/old`, { redirect: 'manual' })
    expect([manual.status, manual.headers.get('location')]).toEqual([302, '/new'])
    const error = await nodeHttpFetch(`${server.url}/old`, { redirect: 'error' }).catch((e: unknown) => e)
    expect([(error as Error).name, (error as Error).message]).toEqual(['TypeError', 'fetch failed'])
    expect(server.seen.map((s) => s.url)).toEqual(['/old', '/old'])
  })

  it('sends a body that is neither text nor bytes through fetch', async () => {
    const server = await serve((_req, res, seen) => res.end(seen.body))
    const response = await nodeHttpFetch(`${server.url}/`, { method: 'POST', body: new URLSearchParams({ a: '1' }) })
    expect(await response.text()).toBe('a=1')
    expect(server.seen[0]?.headers['content-type']).toBe('application/x-www-form-urlencoded;charset=UTF-8')
  })

  it('rejects a refused connection as fetch does: TypeError "fetch failed" with the socket error as cause', async () => {
    const server = await serve(() => {})
    const url = server.url
    await Promise.all(open.splice(0).map((s) => s.close()))
    const error = await nodeHttpFetch(`${url}/`).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as TypeError).message).toBe('fetch failed')
    expect(((error as TypeError).cause as { code?: string }).code).toBe('ECONNREFUSED')
  })

  it('rejects with the signal reason when aborted before the answer, and closes the request', async () => {
    const closed: Promise<unknown>[] = []
    const server = await serve((_req, res) => closed.push(once(res, 'close')))
    const controller = new AbortController()
    const pending = nodeHttpFetch(`${server.url}/`, { method: 'POST', body: '{}', signal: controller.signal })
    while (server.seen.length === 0) await new Promise((resolve) => setImmediate(resolve))
    controller.abort()
    const error = await pending.catch((e: unknown) => e)
    expect(error).toBe(controller.signal.reason)
    expect((error as Error).name).toBe('AbortError')
    await closed[0]
    // An aborted signal sends nothing.
    const again = await nodeHttpFetch(`${server.url}/`, { signal: controller.signal }).catch((e: unknown) => e)
    expect(again).toBe(controller.signal.reason)
    expect(server.seen).toHaveLength(1)
  })

  it('errors a streamed body with the signal reason when aborted mid-stream', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' })
      res.write('data: first\n\n')
    })
    const controller = new AbortController()
    const response = await nodeHttpFetch(`${server.url}/`, { method: 'POST', body: '{}', signal: controller.signal })
    const reader = response.body!.getReader()
    await reader.read()
    controller.abort()
    expect(await reader.read().catch((e: unknown) => e)).toBe(controller.signal.reason)
  })
})

describe('the transport OpenAIProvider builds its client with', () => {
  async function completeOn(provider: OpenAIProvider) {
    const response = await provider.complete(
      { messages: [{ role: 'user', content: 'hi' }], tools: [] },
      { signal: new AbortController().signal },
    )
    return response.message.content
  }
  async function modelServer() {
    const server = await startScriptedModelServer({ scripts: { m: () => ({ content: 'hello' }) } })
    open.push(server)
    return server
  }
  /** Counts the calls that go through `globalThis.fetch` (still sent, by the real fetch). */
  function countFetches() {
    const real = globalThis.fetch
    let calls = 0
    vi.stubGlobal('fetch', (...args: Parameters<typeof fetch>) => {
      calls++
      return real(...args)
    })
    open.push({ close: () => vi.unstubAllGlobals() })
    return () => calls
  }

  it('is node:http by default, not globalThis.fetch', async () => {
    const server = await modelServer()
    const fetches = countFetches()
    expect(fetchIsRouted()).toBe(false)
    expect(await completeOn(new OpenAIProvider({ baseURL: server.url, model: 'm', stream: false }))).toBe('hello')
    expect(await completeOn(new OpenAIProvider({ baseURL: server.url, model: 'm', stream: true }))).toBe('hello')
    expect(fetches()).toBe(0)
    expect(server.requests).toHaveLength(2)
  })

  it('is globalThis.fetch when the process routes fetch through a proxy dispatcher', async () => {
    const server = await modelServer()
    // Node's own dispatcher is an `Agent`: not a proxy.
    withDispatcher(new (class Agent {})(), () => expect(fetchIsRouted()).toBe(false))
    // What undici's ProxyAgent or EnvHttpProxyAgent puts there.
    withDispatcher(new (class ProxyAgent {})(), () => expect(fetchIsRouted()).toBe(true))
    withDispatcher(new (class EnvHttpProxyAgent {})(), () => expect(fetchIsRouted()).toBe(true))
    expect(fetchIsRouted()).toBe(false)
    vi.stubEnv('NODE_USE_ENV_PROXY', '1')
    expect(fetchIsRouted()).toBe(true)
    const fetches = countFetches()
    expect(await completeOn(new OpenAIProvider({ baseURL: server.url, model: 'm', stream: false }))).toBe('hello')
    expect(fetches()).toBe(1)
  })

  it('is the fetch given', async () => {
    const server = await modelServer()
    const urls: string[] = []
    const provider = new OpenAIProvider({
      baseURL: server.url,
      model: 'm',
      stream: false,
      fetch: (input, init) => {
        urls.push(String(input))
        return globalThis.fetch(input, init)
      },
    })
    expect(await completeOn(provider)).toBe('hello')
    expect(urls).toEqual([`${server.url}/chat/completions`])
  })
})
