/**
 * The first connection fails like the CLI's: at once when nothing listens or the host name does
 * not resolve, after the connect timeout when nothing answers; waiting for a server that is not
 * up yet is asked for, not the default.
 */
import net from 'node:net'
import { connectNatsBus, NatsConnectError } from '@signalbox/actors/nats'
import { AbortedError, ConfigError } from '@signalbox/core'
import { afterEach, describe, expect, it } from 'vitest'
import { uniquePrefix } from '../../../../test/support/env.ts'
import { freePort, type NatsServer, startNatsServer } from '../../../../test/support/nats-server.ts'
import { DEFAULT_CONNECT_TIMEOUT_MS } from '../../src/nats/connection.ts'

const cleanup: (() => Promise<unknown> | unknown)[] = []
afterEach(async () => {
  for (const step of cleanup.splice(0).reverse()) await step()
})

/** A TCP server that accepts connections and never says a word (not NATS, or a hung one). */
async function silentServer(): Promise<number> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {})
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  )
  return (server.address() as net.AddressInfo).port
}

/** Resolves to what `connectNatsBus` rejected with, and how long it took. */
async function failure(options: Parameters<typeof connectNatsBus>[0]): Promise<{ error: unknown; ms: number }> {
  const started = performance.now()
  const error = await connectNatsBus(options).then(
    async (bus) => {
      await bus.close()
      return new Error('connected')
    },
    (e: unknown) => e,
  )
  return { error, ms: performance.now() - started }
}

describe('connectNatsBus, first connection', () => {
  it(
    'a closed port fails with NATS_UNREACHABLE naming the address, well within the default timeout',
    async () => {
      const port = await freePort()
      const { error, ms } = await failure({ servers: `nats://127.0.0.1:${port}` })
      expect(error).toBeInstanceOf(NatsConnectError)
      expect(error).toMatchObject({ code: 'NATS_UNREACHABLE', details: { reason: 'ECONNREFUSED' } })
      expect((error as Error).message).toBe(`nothing listens for NATS at nats://127.0.0.1:${port} (is nats-server running?)`)
      expect(ms).toBeLessThan(DEFAULT_CONNECT_TIMEOUT_MS)
    },
    DEFAULT_CONNECT_TIMEOUT_MS + 10_000,
  )

  it('an unresolvable host fails with NATS_UNREACHABLE saying the name does not resolve', async () => {
    // `.invalid` never resolves (RFC 2606). A resolver may be slow to say so: the deadline here
    // is generous, so the test reads the DNS failure, not a timeout.
    const { error } = await failure({ servers: 'nats://signalbox-nowhere.invalid:4222', connectTimeoutMs: 40_000 })
    expect(error).toBeInstanceOf(NatsConnectError)
    expect(error).toMatchObject({ code: 'NATS_UNREACHABLE', details: { hostname: 'signalbox-nowhere.invalid' } })
    expect((error as NatsConnectError).details?.reason).toMatch(/^(ENOTFOUND|EAI_AGAIN|EAI_NONAME|EAI_FAIL|EAI_NODATA)$/)
    expect((error as Error).message).toMatch(
      /^cannot reach NATS at nats:\/\/signalbox-nowhere\.invalid:4222: the host name "signalbox-nowhere\.invalid" (does not resolve|could not be looked up now).*\(DNS: /,
    )
  }, 50_000)

  it('a server that never answers fails after connectTimeoutMs, saying nothing answered', async () => {
    const port = await silentServer()
    const { error, ms } = await failure({ servers: `nats://127.0.0.1:${port}`, connectTimeoutMs: 400 })
    expect(error).toBeInstanceOf(NatsConnectError)
    expect(error).toMatchObject({ code: 'NATS_UNREACHABLE', details: { reason: 'timeout', timeoutMs: 400 } })
    expect((error as Error).message).toMatch(
      new RegExp(`^NATS at nats://127\\.0\\.0\\.1:${port} did not answer within 0\\.4 s \\(.*connectTimeoutMs waits longer\\)$`),
    )
    expect(ms).toBeGreaterThanOrEqual(390)
  })

  it('the password in a URL stays out of the error', async () => {
    const port = await freePort()
    const { error } = await failure({ servers: `nats://bob:s3cret@127.0.0.1:${port}` })
    expect((error as Error).message).toContain(`nats://bob:***@127.0.0.1:${port}`)
    expect(JSON.stringify(error)).not.toContain('s3cret')
  })

  it('waitForServer: a process started before its server connects once the server is up', async () => {
    const port = await freePort()
    let settled = false
    const connecting = connectNatsBus({
      servers: `nats://127.0.0.1:${port}`,
      prefix: uniquePrefix(),
      waitForServer: true,
      connectTimeoutMs: 60_000,
      reconnectTimeWaitMs: 50,
    }).finally(() => {
      settled = true
    })
    connecting.catch(() => {})
    // Nothing listens yet: the connect is refused, and the bus keeps waiting.
    const refused = await new Promise<boolean>((resolve) =>
      net
        .connect({ host: '127.0.0.1', port })
        .once('connect', function (this: net.Socket) {
          this.destroy()
          resolve(false)
        })
        .once('error', () => resolve(true)),
    )
    expect(refused).toBe(true)
    expect(settled).toBe(false)
    const server: NatsServer = await startNatsServer({ port })
    cleanup.push(() => server.dispose())
    const bus = await connecting
    cleanup.push(() => bus.close())
    const got = new Promise<string>((resolve) => {
      bus.subscribe('hello', (message) => resolve(message.text()))
    })
    await bus.flush()
    bus.publish('hello', 'up')
    expect(await got).toBe('up')
  })

  it('waiting forever (connectTimeoutMs: Infinity) still ends when the signal aborts', async () => {
    const port = await freePort()
    const controller = new AbortController()
    const connecting = connectNatsBus({
      servers: `nats://127.0.0.1:${port}`,
      waitForServer: true,
      connectTimeoutMs: Number.POSITIVE_INFINITY,
      signal: controller.signal,
    })
    controller.abort()
    await expect(connecting).rejects.toBeInstanceOf(AbortedError)
  })

  it('a connectTimeoutMs that is not a positive number is a ConfigError', async () => {
    for (const connectTimeoutMs of [0, -1, Number.NaN]) {
      await expect(connectNatsBus({ servers: 'nats://127.0.0.1:4222', connectTimeoutMs })).rejects.toBeInstanceOf(ConfigError)
    }
  })
})
