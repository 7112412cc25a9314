/**
 * The NATS connection under the bus: opening it (within a deadline, then never giving up on
 * reconnects), and watching it, so retries can resume the moment the link is back and stop when
 * it is closed for good.
 */
import type { NatsConnection } from '@nats-io/transport-node'
import { AbortedError, ConfigError } from '@signalbox/core'
import { BusError, type BusStatus } from '@signalbox/core/bus'
import { untilAborted } from '@signalbox/core/internal'
import { type Deferred, deferred, type Outcome, raceOutcome } from './async.ts'
import { classifyConnectError, connectTimedOut, dialNats, redactUrls } from './connect-errors.ts'
import { busCredentials, credentialOf, natsConnectOptions, serverList } from './credentials.ts'
import { defaultConnectionName, type NatsBusOptions } from './options.ts'

/** How long connecting may take when `connectTimeoutMs` is not given. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000

/**
 * Connects with the transport's reconnect settings. The first connection fails like the `nats`
 * CLI: at once when nothing listens or the name does not resolve (unless `waitForServer`), and
 * after `connectTimeoutMs` when nothing answers; aborting stops waiting.
 */
export async function openConnection(options: NatsBusOptions): Promise<NatsConnection> {
  const { signal } = options
  if (signal?.aborted) throw new AbortedError('Connecting to NATS was aborted.', signal.reason)
  const timeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS
  if (!(timeoutMs > 0))
    throw new ConfigError(`connectTimeoutMs must be a positive number of milliseconds (or Infinity), got ${timeoutMs}.`)
  const where = () => ({
    servers: serverList(options.credentials?.servers ?? options.servers),
    credential: credentialOf(options),
  })
  const reconnectTimeWait = options.reconnectTimeWaitMs ?? 250
  let lastFailure: unknown
  const stop = new AbortController()
  const connecting = dialNats(
    {
      servers: options.servers,
      name: options.name ?? defaultConnectionName(),
      // Never give up once connected: the default (10 attempts) closes the connection for good after ~20 s.
      maxReconnectAttempts: -1,
      reconnectTimeWait,
      reconnectJitter: Math.min(100, reconnectTimeWait),
      pingInterval: options.pingIntervalMs ?? 10_000,
      ...(options.inboxPrefix !== undefined ? { inboxPrefix: options.inboxPrefix } : {}),
      // One attempt never outlasts the deadline (nats.js's own is 20 s).
      ...(Number.isFinite(timeoutMs) ? { timeout: Math.min(timeoutMs, 20_000) } : {}),
      // One set of credentials: those in the server URLs too (and the URLs without them).
      ...natsConnectOptions(busCredentials(options)),
    },
    {
      waitForServer: options.waitForServer ?? false,
      retryWaitMs: reconnectTimeWait,
      onFailure: (error) => {
        lastFailure = error
      },
      stop: stop.signal,
    },
  )
  const deadline = deadlineAfter(timeoutMs)
  try {
    return await untilAborted(Promise.race([connecting, deadline.passed]), signal, 'Connecting to NATS')
  } catch (error) {
    // No new attempt starts; one under way is closed if it ever lands.
    stop.abort()
    if (AbortedError.is(error)) throw error
    if (error === TIMED_OUT) throw connectTimedOut(timeoutMs, lastFailure, where())
    throw (
      classifyConnectError(error, where()) ??
      new BusError(
        'BUS_CONNECT_FAILED',
        `Could not connect to NATS at ${redactUrls(String(options.servers))}: ${String((error as Error)?.message ?? error)}.`,
        {
          cause: error,
        },
      )
    )
  } finally {
    deadline.clear()
  }
}

const TIMED_OUT = Symbol('connect timed out')

/** Rejects with `TIMED_OUT` after `ms` (never for Infinity); `clear` before leaving. */
function deadlineAfter(ms: number): { passed: Promise<never>; clear(): void } {
  if (ms === Number.POSITIVE_INFINITY) return { passed: new Promise<never>(() => {}), clear: () => {} }
  let timer: ReturnType<typeof setTimeout> | undefined
  const passed = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(TIMED_OUT), ms)
  })
  return { passed, clear: () => clearTimeout(timer) }
}

export interface ConnectionHooks {
  /** After every reconnect (the server may have restarted), before listeners hear of it. */
  onReconnect(): void
  /** Once the connection is closed for good. */
  onClosed(): void
}

/** Turns the connection's status stream into `BusStatus` events and the reconnect / closed signals. */
export class ConnectionWatch {
  readonly #connection: NatsConnection
  readonly #hooks: ConnectionHooks
  readonly #listeners = new Set<(status: BusStatus) => void>()
  /** Replaced at every reconnect: waiting on it lets retries resume as soon as the link is back. */
  #reconnected: Deferred = deferred()
  readonly #closed = deferred()

  constructor(connection: NatsConnection, hooks: ConnectionHooks) {
    this.#connection = connection
    this.#hooks = hooks
    void this.#watch()
    connection
      .closed()
      .then((error) => {
        hooks.onClosed()
        this.#closed.resolve()
        if (error) this.emit({ type: 'error', error })
        this.emit({ type: 'closed' })
      })
      .catch(() => {})
  }

  /** Resolves at the next reconnect. */
  get reconnected(): Promise<void> {
    return this.#reconnected.promise
  }

  /** Resolves once the bus is closed (or the connection closed under it). */
  get closed(): Promise<void> {
    return this.#closed.promise
  }

  markClosed(): void {
    this.#closed.resolve()
  }

  onStatus(listener: (status: BusStatus) => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  emit(status: BusStatus): void {
    for (const listener of this.#listeners) {
      try {
        listener(status)
      } catch {
        // A listener must not break the status loop.
      }
    }
  }

  /** Waits for `work`, but gives up early (without cancelling it) on reconnect, close or abort. */
  race<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<Outcome<T>> {
    return raceOutcome(work, this.#reconnected.promise, this.#closed.promise, signal)
  }

  /** Waits `ms`, or less if the connection comes back or the bus closes. */
  pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const finish = () => {
        clearTimeout(timer)
        signal?.removeEventListener('abort', onAbort)
        resolve()
      }
      const onAbort = () => {
        clearTimeout(timer)
        reject(new AbortedError('The operation was aborted.', signal?.reason))
      }
      const timer = setTimeout(finish, ms)
      void this.#reconnected.promise.then(finish)
      void this.#closed.promise.then(finish)
      signal?.addEventListener('abort', onAbort, { once: true })
    })
  }

  async #watch(): Promise<void> {
    for await (const status of this.#connection.status()) {
      switch (status.type) {
        case 'disconnect':
          this.emit({ type: 'disconnect', server: status.server })
          break
        case 'reconnecting':
          this.emit({ type: 'reconnecting' })
          break
        case 'reconnect': {
          const previous = this.#reconnected
          this.#reconnected = deferred()
          previous.resolve()
          this.#hooks.onReconnect()
          this.emit({ type: 'reconnect', server: status.server })
          break
        }
        case 'error':
          this.emit({ type: 'error', error: status.error })
          break
        default:
        // ping, update, ldm, slow consumer...: not part of BusStatus.
      }
    }
  }
}
