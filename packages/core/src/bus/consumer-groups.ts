/**
 * The in-process counterpart of JetStream pull consumers: each `durableConsume` joins a group
 * (one per durable name, or a private one), every member handles one message at a time, and a
 * message not acknowledged within the group's ack wait is delivered again.
 */
import type { Clock } from '../clock.ts'
import { DEFAULT_ACK_WAIT_MS, type DurableConsumeOptions, type DurableHandler, type Subscription } from './bus.ts'
import type { DurableLog, LogEntry } from './durable-log.ts'
import { DurableConsumerConflictError } from './errors.ts'
import { LocalDurableMessage, LocalSubscription, type Replier } from './local-messages.ts'
import { tokensMatch } from './subjects.ts'

/** One message handed to a consumer and not yet acknowledged. */
interface Pending {
  readonly entry: LogEntry
  deliveries: number
  done: boolean
  queued: boolean
  timer: unknown
}

interface Member {
  readonly handler: DurableHandler
  readonly subscription: LocalSubscription
  busy: boolean
}

/** One consumer (durable when it has a name): its filter, position in the log and members. */
class ConsumerGroup {
  readonly filter: string
  readonly filterTokens: string[] | undefined
  readonly durableName: string | undefined
  readonly ackWaitMs: number
  /** Next log sequence to look at. */
  cursor: number
  readonly members: Member[] = []
  roundRobin = 0
  readonly pending = new Map<number, Pending>()
  readonly redeliver: Pending[] = []

  constructor(filter: string, durableName: string | undefined, ackWaitMs: number, cursor: number) {
    this.filter = filter
    this.filterTokens = filter.includes('*') || filter.includes('>') ? filter.split('.') : undefined
    this.durableName = durableName
    this.ackWaitMs = ackWaitMs
    this.cursor = cursor
  }

  matches(entry: LogEntry): boolean {
    if (this.filterTokens === undefined) return entry.subject === this.filter
    if (entry.tokens === undefined) entry.tokens = entry.subject.split('.')
    return tokensMatch(this.filterTokens, entry.tokens)
  }
}

/** What the groups need from their bus. */
export interface GroupsHost extends Replier {
  readonly log: DurableLog
  readonly clock: Clock
  /** Reports a handler that threw or rejected. */
  report(error: unknown, subject: string, subscription: string, durable: boolean): void
}

export class ConsumerGroups {
  readonly #host: GroupsHost
  readonly #groups = new Set<ConsumerGroup>()
  readonly #durable = new Map<string, ConsumerGroup>()
  #stopped = false

  constructor(host: GroupsHost) {
    this.#host = host
  }

  /** Adds a consumer for `subject` (arguments already validated). */
  join(subject: string, handler: DurableHandler, options: DurableConsumeOptions): Subscription {
    const { durableName, signal } = options
    const ackWaitMs = options.ackWaitMs ?? DEFAULT_ACK_WAIT_MS
    let group = durableName === undefined ? undefined : this.#durable.get(durableName)
    if (group !== undefined && group.filter !== subject) {
      throw new DurableConsumerConflictError(durableName as string, group.filter, subject)
    }
    const member: Member = {
      handler,
      busy: false,
      subscription: new LocalSubscription(subject, noop, undefined, () => this.#leave(group as ConsumerGroup, member)),
    }
    if (signal?.aborted) {
      member.subscription.closed = true
      return member.subscription
    }
    if (group === undefined) {
      const { log } = this.#host
      const start =
        options.startSeq !== undefined
          ? Math.max(log.firstSeq, options.startSeq)
          : options.deliverAll
            ? log.firstSeq
            : log.lastSeq + 1
      group = new ConsumerGroup(subject, durableName, ackWaitMs, start)
      this.#groups.add(group)
      if (durableName !== undefined) this.#durable.set(durableName, group)
    }
    group.members.push(member)
    if (signal) member.subscription.bindSignal(signal)
    this.#pump(group)
    return member.subscription
  }

  /** A new entry is in the log: wake the groups it is for. */
  appended(entry: LogEntry): void {
    for (const group of this.#groups) if (group.matches(entry)) this.#pump(group)
  }

  /** No more deliveries start (the bus is closing). */
  stop(): void {
    this.#stopped = true
  }

  /** Closes every member and drops every group (after the bus drained). */
  dispose(): void {
    for (const group of this.#groups) {
      for (const member of group.members) member.subscription.closed = true
      this.#disposeGroup(group)
    }
    this.#durable.clear()
  }

  #pump(group: ConsumerGroup): void {
    if (this.#stopped) return
    for (;;) {
      const member = nextIdleMember(group)
      if (member === undefined) return
      const pending = this.#nextPending(group)
      if (pending === undefined) return
      this.#deliver(group, member, pending)
    }
  }

  #nextPending(group: ConsumerGroup): Pending | undefined {
    while (group.redeliver.length > 0) {
      const pending = group.redeliver.shift() as Pending
      pending.queued = false
      if (!pending.done) return pending
    }
    const { log } = this.#host
    if (group.cursor < log.firstSeq) group.cursor = log.firstSeq
    while (group.cursor <= log.lastSeq) {
      const entry = log.at(group.cursor)
      group.cursor++
      if (!group.matches(entry)) continue
      const pending: Pending = { entry, deliveries: 0, done: false, queued: false, timer: undefined }
      group.pending.set(entry.seq, pending)
      return pending
    }
    return undefined
  }

  #deliver(group: ConsumerGroup, member: Member, pending: Pending): void {
    member.busy = true
    const delivery = ++pending.deliveries
    // Like JetStream, the ack wait runs from delivery: not acknowledged in time → delivered again.
    const redeliverAfter = (ms: number) => {
      this.#clearTimer(pending)
      pending.timer = this.#startTimer(() => {
        pending.timer = undefined
        this.#requeue(group, pending)
      }, ms)
    }
    redeliverAfter(group.ackWaitMs)
    // Only the current delivery may postpone or ask for redelivery (a stale one must not duplicate it).
    const current = () => !pending.done && !pending.queued && pending.deliveries === delivery
    const { entry } = pending
    const message = new LocalDurableMessage(
      entry.seq,
      entry.subject,
      entry.data,
      entry.headers,
      this.#host,
      {
        ack: () => {
          if (pending.done) return
          pending.done = true
          this.#clearTimer(pending)
          group.pending.delete(entry.seq)
        },
        nak: (delayMs) => {
          if (!current()) return
          if (delayMs !== undefined && delayMs > 0) redeliverAfter(delayMs)
          else {
            this.#clearTimer(pending)
            this.#requeue(group, pending)
          }
        },
        working: () => {
          if (current()) redeliverAfter(group.ackWaitMs)
        },
      },
      entry.storedAt,
    )
    queueMicrotask(async () => {
      try {
        if (!member.subscription.closed) await member.handler(message)
      } catch (error) {
        // Not acknowledged, so it comes back after the ack wait.
        this.#host.report(error, message.subject, group.filter, true)
      } finally {
        member.busy = false
        this.#pump(group)
      }
    })
  }

  #requeue(group: ConsumerGroup, pending: Pending): void {
    if (pending.done || pending.queued || !this.#groups.has(group)) return
    pending.queued = true
    group.redeliver.push(pending)
    this.#pump(group)
  }

  #leave(group: ConsumerGroup, member: Member): void {
    const index = group.members.indexOf(member)
    if (index !== -1) group.members.splice(index, 1)
    // A private consumer ends with its subscriber; a durable one keeps its place for the next.
    if (group.durableName === undefined) this.#disposeGroup(group)
  }

  #disposeGroup(group: ConsumerGroup): void {
    this.#groups.delete(group)
    for (const pending of group.pending.values()) this.#clearTimer(pending)
    group.pending.clear()
    group.redeliver.length = 0
  }

  #startTimer(fn: () => void, ms: number): unknown {
    const timer = this.#host.clock.setTimeout(fn, ms)
    // Waiting redeliveries must not keep the process alive on their own.
    ;(timer as { unref?: () => void } | undefined)?.unref?.()
    return timer
  }

  #clearTimer(pending: Pending): void {
    if (pending.timer === undefined) return
    this.#host.clock.clearTimeout(pending.timer)
    pending.timer = undefined
  }
}

function noop(): void {}

function nextIdleMember(group: ConsumerGroup): Member | undefined {
  const { members } = group
  const n = members.length
  for (let i = 0; i < n; i++) {
    const index = (group.roundRobin + i) % n
    const member = members[index] as Member
    if (!member.busy && !member.subscription.closed) {
      group.roundRobin = index + 1
      return member
    }
  }
  return undefined
}
