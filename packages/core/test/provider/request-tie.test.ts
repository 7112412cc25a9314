import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAgent, OpenAIProvider, type Provider, type ProviderCallOptions, type ProviderRequest } from '@signalbox/core'
import { startScriptedModelServer } from '@signalbox/core/testing'
import OpenAI from 'openai'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { waitFor } from 'xstate'
import { RequestTie } from '../../src/provider/request-tie.ts'

/**
 * A call's abort reaches the SDK's own controller of its request (`RequestTie`), so the client
 * built by `OpenAIProvider` is handed no signal; a client given is handed the call's signal. Either
 * way a cancelled run closes its request on the server, mid-stream too.
 */
const open: { close(): unknown }[] = []
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()))
})

/** A server that takes each request and never finishes it (streamed: after a first chunk), and sees it closed. */
async function holdingServer() {
  const requests: { closed: Promise<void>; finished: () => boolean }[] = []
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = ''
    req.on('data', (chunk: Buffer) => (body += chunk.toString()))
    req.on('end', () => {
      const closed = new Promise<void>((resolve) => res.once('close', () => resolve()))
      requests.push({ closed, finished: () => res.writableFinished })
      if ((JSON.parse(body) as { stream?: boolean }).stream) {
        res.writeHead(200, { 'content-type': 'text/event-stream' })
        const chunk = {
          id: 'c',
          object: 'chat.completion.chunk',
          created: 0,
          model: 'm',
          choices: [{ index: 0, delta: { content: 'Hel' } }],
        }
        res.write(`data: ${JSON.stringify(chunk)}\n\n`)
      }
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  open.push({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) })
  open.push({ close: () => server.closeAllConnections() })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, requests }
}

async function nextTick(): Promise<void> {
  await new Promise<void>((resolve) => setImmediate(resolve))
}

/** Cancels a run of `provider` once its request is on `server`; the server sees it closed, unfinished. */
async function cancelClosesRequest(server: Awaited<ReturnType<typeof holdingServer>>, provider: Provider): Promise<void> {
  const handle = createAgent({ provider }).start('hi')
  handle.result.catch(() => {})
  await waitFor(handle.actor, (s) => s.hasTag('model'))
  while (server.requests.length === 0) await nextTick()
  handle.cancel()
  await expect(handle.result).rejects.toMatchObject({ code: 'RUN_CANCELLED' })
  // The server sees its request closed, unfinished: the client aborted it.
  await server.requests[0]?.closed
  expect(server.requests[0]?.finished()).toBe(false)
}

describe('a cancelled run closes its request', () => {
  for (const stream of [false, true]) {
    for (const given of [false, true]) {
      it(`${stream ? 'streamed' : 'stream: false'}, ${given ? 'a client given (its signal)' : 'the client built (tied)'}`, async () => {
        const server = await holdingServer()
        const provider = new OpenAIProvider({
          model: 'm',
          stream,
          ...(given ? { client: new OpenAI({ baseURL: server.url, apiKey: 'k', maxRetries: 0 }) } : { baseURL: server.url }),
        })
        await cancelClosesRequest(server, provider)
      })
    }
  }
})

describe('a provider wrapping OpenAIProvider', () => {
  it('that copies the options still has its cancelled run close the request', async () => {
    const server = await holdingServer()
    const inner = new OpenAIProvider({ model: 'm', stream: false, baseURL: server.url })
    const wrapper = {
      model: 'm',
      complete: (request: ProviderRequest, options: ProviderCallOptions) => inner.complete(request, { ...options }),
    }
    await cancelClosesRequest(server, wrapper)
  })
})

/** Counts the reads of each call's `signal` (the agent makes one only when it is read). */
class CountingProvider extends OpenAIProvider {
  signalReads = 0
  override complete(request: ProviderRequest, options: ProviderCallOptions) {
    const counted = new Proxy(options, {
      get: (target, key, receiver) => {
        if (key === 'signal') this.signalReads++
        return Reflect.get(target, key, receiver)
      },
    })
    return super.complete(request, counted)
  }
}

describe("the call's signal", () => {
  it('is not made for the client built here; a client given is handed it', async () => {
    const server = await startScriptedModelServer({ scripts: { m: [{ content: 'one' }, { content: 'two' }] } })
    open.push(server)
    const built = new CountingProvider({ model: 'm', baseURL: server.url, stream: false })
    await createAgent({ provider: built }).run('a')
    const given = new CountingProvider({
      model: 'm',
      stream: false,
      client: new OpenAI({ baseURL: server.url, apiKey: 'k', maxRetries: 0 }),
    })
    await createAgent({ provider: given }).run('b')
    expect(built.signalReads).toBe(0)
    expect(given.signalReads).toBeGreaterThan(0)
  })

  it('is handed over again, for good, once a request went without the SDK handing its controller to the tie', async () => {
    const server = await startScriptedModelServer({ scripts: { m: [{ content: 'one' }, { content: 'two' }] } })
    open.push(server)
    // As an SDK that no longer sends through `fetchWithTimeout` would.
    const bypass = vi
      .spyOn(OpenAI.prototype as unknown as { fetchWithAuth: (...args: unknown[]) => Promise<Response> }, 'fetchWithAuth')
      .mockImplementation(function (this: { fetch: typeof fetch }, url, init, _timeout, controller) {
        return this.fetch.call(undefined, url as string, {
          ...(init as RequestInit),
          signal: (controller as AbortController).signal,
        })
      })
    try {
      const provider = new CountingProvider({ model: 'm', baseURL: server.url, stream: false })
      await createAgent({ provider }).run('a')
      expect(provider.signalReads).toBe(0)
      await createAgent({ provider }).run('b')
      expect(provider.signalReads).toBeGreaterThan(0)
      expect(bypass).toHaveBeenCalledTimes(2)
    } finally {
      bypass.mockRestore()
    }
  })
})

describe('RequestTie', () => {
  function callAbort() {
    const listeners = new Set<() => void>()
    return {
      aborted: false,
      listeners,
      onAbort(listener: () => void) {
        listeners.add(listener)
        return () => listeners.delete(listener)
      },
      abort() {
        this.aborted = true
        for (const listener of listeners) listener()
      },
    }
  }

  it('aborts the request while tied, and leaves nothing registered once untied', () => {
    const abort = callAbort()
    const tie = new RequestTie(abort)
    const controller = new AbortController()
    tie.tie(controller)
    expect(tie.tied).toBe(true)
    expect(abort.listeners.size).toBe(1)
    tie.untie()
    expect(abort.listeners.size).toBe(0)
    abort.abort()
    expect(controller.signal.aborted).toBe(false)

    const again = new RequestTie(abort)
    const second = new AbortController()
    again.tie(second)
    abort.abort()
    expect(second.signal.aborted).toBe(true)
  })
})
