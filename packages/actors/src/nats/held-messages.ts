/**
 * The messages one durable consumer holds: received from the server, not yet acknowledged or
 * nak'd. The server's `ack_wait` is kept short (`serverAckWaitMs`, a few seconds) so that what a
 * dead consumer held comes back quickly. While the consumer lives it extends each held message
 * with in-progress acks (`+WPI`) every third of that, until the caller's own ack wait
 * (`ackWaitMs`) has passed without an ack or `working()`; then it lets the server redeliver.
 * On an orderly shutdown the held messages are nak'd, so another member takes them at once.
 */
import type { JsMsg } from '@nats-io/jetstream'

interface Held {
  /** When the caller's ack wait runs out (extended by `working()`). */
  leaseEnds: number
  /** Nak'd when released: through the message handed to the handler, so its later ack is ignored. */
  nak: () => void
  /** In the handler right now: released after it returns instead. */
  handling: boolean
}

export class HeldMessages {
  readonly #held = new Map<JsMsg, Held>()
  readonly #ackWaitMs: number
  #heartbeatMs: number | undefined
  readonly #connectionClosed: () => boolean
  #timer: ReturnType<typeof setInterval> | undefined
  #releasing = false

  constructor(ackWaitMs: number, serverAckWaitMs: number, connectionClosed: () => boolean) {
    this.#ackWaitMs = ackWaitMs
    this.#connectionClosed = connectionClosed
    this.useServerAckWait(serverAckWaitMs)
  }

  /** The `ack_wait` the consumer has on the server (another member may have made it shorter). */
  useServerAckWait(serverAckWaitMs: number): void {
    // When the caller's ack wait fits in the server's, the server alone times it: no heartbeats.
    const heartbeatMs = this.#ackWaitMs > serverAckWaitMs ? Math.max(1, Math.floor(serverAckWaitMs / 3)) : undefined
    if (heartbeatMs === this.#heartbeatMs) return
    this.#heartbeatMs = heartbeatMs
    this.#stopHeartbeats()
    if (this.#held.size > 0) this.#startHeartbeats()
  }

  /** A message came in. After `releaseAll()` it goes straight back to the server. */
  hold(msg: JsMsg): void {
    if (this.#releasing) {
      sendQuietly(() => msg.nak())
      return
    }
    const now = Date.now()
    if (this.#heartbeatMs === undefined) this.#forgetExpired(now)
    this.#held.set(msg, { leaseEnds: now + this.#ackWaitMs, nak: () => msg.nak(), handling: false })
    this.#startHeartbeats()
  }

  /** The handler is called with it (`nak` goes through the message the handler got). */
  handOut(msg: JsMsg, nak: () => void): void {
    const held = this.#held.get(msg)
    if (held === undefined) return
    held.nak = nak
    held.handling = true
  }

  /** The caller said it is still working on it: another ack wait from now. */
  extend(msg: JsMsg): void {
    const held = this.#held.get(msg)
    if (held !== undefined) held.leaseEnds = Date.now() + this.#ackWaitMs
  }

  /** Acknowledged or nak'd by the caller: nothing more to do for it. */
  settle(msg: JsMsg): void {
    this.#held.delete(msg)
    if (this.#held.size === 0) this.#stopHeartbeats()
  }

  /** The handler returned. Shutting down: what it left unsettled goes back to the server. */
  handled(msg: JsMsg): void {
    const held = this.#held.get(msg)
    if (held === undefined) return
    held.handling = false
    if (this.#releasing) this.#release(msg, held)
  }

  /** Orderly shutdown: nak everything held except what a handler is busy with (that follows when it returns). */
  releaseAll(): void {
    this.#releasing = true
    for (const [msg, held] of [...this.#held]) if (!held.handling) this.#release(msg, held)
  }

  #release(msg: JsMsg, held: Held): void {
    this.settle(msg)
    // Past its lease the server has redelivered it, maybe to another member: a nak would disturb that delivery.
    if (Date.now() < held.leaseEnds && !this.#connectionClosed()) sendQuietly(held.nak)
  }

  /** Without heartbeats nothing else drops what the caller never settled (a handler that keeps failing). */
  #forgetExpired(now: number): void {
    for (const [msg, held] of this.#held) if (now >= held.leaseEnds) this.#held.delete(msg)
  }

  #startHeartbeats(): void {
    if (this.#heartbeatMs === undefined || this.#timer !== undefined) return
    this.#timer = setInterval(() => this.#beat(), this.#heartbeatMs)
    // Held messages must not keep the process alive on their own.
    this.#timer.unref?.()
  }

  #stopHeartbeats(): void {
    if (this.#timer === undefined) return
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  #beat(): void {
    if (this.#connectionClosed()) {
      this.#stopHeartbeats()
      return
    }
    const now = Date.now()
    for (const [msg, held] of this.#held) {
      if (now >= held.leaseEnds) {
        // The caller's ack wait is over: stop extending, so the server redelivers as it would have.
        this.#held.delete(msg)
        continue
      }
      sendQuietly(() => msg.working())
    }
    if (this.#held.size === 0) this.#stopHeartbeats()
  }
}

/** Sends a nak or in-progress ack; if the link is down it is lost, and the server's ack wait covers that. */
function sendQuietly(send: () => void): void {
  try {
    send()
  } catch {
    // the connection is closed or reconnecting
  }
}
