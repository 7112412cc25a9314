/**
 * The NATS connection under the bus: opening it (never giving up on reconnects), and watching it,
 * so retries can resume the moment the link is back and stop when it is closed for good.
 */
import type { NatsConnection } from '@nats-io/transport-node'
import { AbortedError } from '@signalbox/core'
import { BusError, type BusStatus } from '@signalbox/core/bus'
import { untilAborted } from '@signalbox/core/internal'
import { type Deferred, deferred, type Outcome, raceOutcome } from './async.ts'
import { classifyConnectError, dialNats } from './connect-errors.ts'
import { busCredentials, credentialOf, natsConnectOptions, redactUrlSecrets, serverList } from './credentials.ts'
import { defaultConnectionName, type NatsBusOptions } from './options.ts'

/** Connects with the transport's reconnect settings; aborting stops waiting for the first connect. */
export async function openConnection(options: NatsBusOptions): Promise<NatsConnection> {
  const { signal } = options
  if (signal?.aborted) throw new AbortedError('Connecting to NATS was aborted.', signal.reason)
  const reconnectTimeWait = options.reconnectTimeWaitMs ?? 250
  const connecting = dialNats({
    servers: options.servers,
    name: options.name ?? defaultConnectionName(),
    // Never give up: the default (10 attempts) closes the connection for good after ~20 s.
    maxReconnectAttempts: -1,
    waitOnFirstConnect: true,
    reconnectTimeWait,
    reconnectJitter: Math.min(100, reconnectTimeWait),
    pingInterval: options.pingIntervalMs ?? 10_000,
    ...(options.inboxPrefix !== undefined ? { inboxPrefix: options.inboxPrefix } : {}),
    // One set of credentials: those in the server URLs too (and the URLs without them).
    ...natsConnectOptions(busCredentials(options)),
  })
  try {
    return await untilAborted(connecting, signal, 'Connecting to NATS')
  } catch (error) {
    // With waitOnFirstConnect the attempt goes on in the background: close it if it ever lands.
    connecting.then((late) => late.close()).catch(() => {})
    if (error instanceof AbortedError) throw error
    throw (
      classifyConnectError(error, {
        servers: serverList(options.credentials?.servers ?? options.servers),
        credential: credentialOf(options),
      }) ??
      new BusError('BUS_CONNECT_FAILED', `Could not connect to NATS at ${redactUrlSecrets(String(options.servers))}.`, {
        cause: error,
      })
    )
  }
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
