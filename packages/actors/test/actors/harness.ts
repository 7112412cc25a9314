/**
 * Shared harness of the actor scenarios. Every scenario is written once against a `Transport`
 * and runs twice: on the in-process bus (one bus, shared by all actors, durable subjects as on
 * NATS) and on NATS (the shared server at NATS_URL; each actor gets its own connection with
 * the deployment's prefix, so "another actor" really is another client).
 */
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import {
  type Agent,
  type AgentEvent,
  type AgentEventOf,
  type AgentEventType,
  type AuditEntry,
  type AuditLog,
  type Message,
  type ToolMessage,
  tool,
} from '@signalbox/core'
import {
  type Bus,
  createInProcessBus,
  createSubjects,
  defaultDurableSubjects,
  type Subjects,
  usedApprovalsBucket,
} from '@signalbox/core/bus'
import { decodeMessage, RejectionMessage } from '@signalbox/core/protocol'
import type { ScriptedProvider } from '@signalbox/core/testing'
import { onTestFinished } from 'vitest'
import { z } from 'zod'
import { NATS_URL, uniquePrefix } from '../../../../test/support/env.ts'

export interface Deployment {
  readonly transport: TransportName
  readonly prefix: string
  readonly subjects: Subjects
  /** A bus for one actor: in-process, the one shared bus; on NATS, a new connection with the same prefix. */
  bus(name?: string): Promise<Bus>
  /** Runs `cleanup` at dispose time, before the buses close (last registered, first run). */
  defer(cleanup: () => unknown): void
  /** Errors thrown by any handler on any of this deployment's buses: an actor that let bad input escape. */
  readonly handlerErrors: unknown[]
  dispose(): Promise<void>
}

export type TransportName = 'in-process' | 'nats'

export interface Transport {
  readonly name: TransportName
  deploy(): Promise<Deployment>
}

function baseDeployment(
  transport: TransportName,
  prefix: string,
  open: (name: string, onError: (e: unknown) => void) => Promise<Bus>,
  afterClose?: (buses: Bus[]) => Promise<void>,
): Deployment {
  const buses: Bus[] = []
  const cleanups: (() => unknown)[] = []
  const handlerErrors: unknown[] = []
  let disposed = false
  return {
    transport,
    prefix,
    subjects: createSubjects(prefix),
    handlerErrors,
    async bus(name = 'actor') {
      const bus = await open(`${name}-${prefix}`, (error) => handlerErrors.push(error))
      buses.push(bus)
      return bus
    },
    defer(cleanup) {
      cleanups.push(cleanup)
    },
    async dispose() {
      if (disposed) return
      disposed = true
      for (const cleanup of cleanups.reverse()) {
        try {
          await cleanup()
        } catch {
          // best effort
        }
      }
      await Promise.allSettled(buses.map((bus) => bus.close()))
      await afterClose?.(buses)
    },
  }
}

export const inProcess: Transport = {
  name: 'in-process',
  async deploy() {
    const prefix = uniquePrefix()
    let shared: Bus | undefined
    return baseDeployment('in-process', prefix, async (_name, onError) => {
      // One bus is the whole "network": every actor gets the same one.
      shared ??= createInProcessBus({ durableSubjects: defaultDurableSubjects(prefix), onHandlerError: onError })
      return shared
    })
  },
}

export const nats: Transport = {
  name: 'nats',
  async deploy() {
    const prefix = uniquePrefix()
    return baseDeployment(
      'nats',
      prefix,
      (name, onError) =>
        connectNatsBus({
          servers: NATS_URL,
          name,
          prefix,
          durable: { storage: 'memory' },
          reconnectTimeWaitMs: 100,
          drainTimeoutMs: 1_000,
          onHandlerError: onError,
        }),
      async (buses) => {
        const streamName = (buses[0] as NatsBus | undefined)?.streamName
        if (streamName === undefined) return
        const admin = await connect({ servers: NATS_URL, name: `cleanup-${prefix}` })
        try {
          const jsm = await jetstreamManager(admin)
          await jsm.streams.delete(streamName).catch(() => {})
          // The enforcing tool hosts' ledger of used approvals, if the test had one.
          await jsm.streams.delete(`KV_${usedApprovalsBucket(prefix)}`).catch(() => {})
        } finally {
          await admin.close()
        }
      },
    )
  },
}

export const TRANSPORTS: Transport[] = [inProcess, nats]

/** A deployment for the current test, disposed when the test ends (pass or fail). */
export async function deploy(transport: Transport): Promise<Deployment> {
  const deployment = await transport.deploy()
  onTestFinished(() => deployment.dispose())
  return deployment
}

// ---- waiting ----

export interface Deferred<T> {
  promise: Promise<T>
  resolve(value: T): void
  reject(error: unknown): void
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void
  let reject!: (error: unknown) => void
  const promise = new Promise<T>((res, rej) => {
    resolve = res
    reject = rej
  })
  return { promise, resolve, reject }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** Polls until `check` returns something truthy (or does not throw); fails after `timeoutMs`. */
export async function eventually<T>(check: () => T | Promise<T>, timeoutMs = 3_000, what = 'condition'): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const value = await check()
      if (value) return value as NonNullable<T>
      last = undefined
    } catch (error) {
      last = error
    }
    if (Date.now() > deadline) {
      throw new Error(
        `Timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${String((last as Error).message ?? last)}` : ''}`,
      )
    }
    await sleep(10)
  }
}

/** Rejects with a clear message if `promise` takes longer than `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what}: not settled within ${ms} ms`)), ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error: unknown) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

// ---- agents ----

/** Records an agent's events, with a way to wait for one. */
export function recordEvents(agent: Agent) {
  const events: AgentEvent[] = []
  const waiters: { test: (event: AgentEvent) => boolean; resolve: (event: AgentEvent) => void }[] = []
  agent.on('*', (event) => {
    events.push(event)
    for (const waiter of [...waiters]) {
      if (waiter.test(event)) {
        waiters.splice(waiters.indexOf(waiter), 1)
        waiter.resolve(event)
      }
    }
  })
  return {
    events,
    of<T extends AgentEventType>(type: T): AgentEventOf<T>[] {
      return events.filter((e): e is AgentEventOf<T> => e.type === type)
    },
    /** The first event of `type` (already seen or still to come) matching `predicate`. */
    next<T extends AgentEventType>(
      type: T,
      predicate: (event: AgentEventOf<T>) => boolean = () => true,
      timeoutMs = 5_000,
    ): Promise<AgentEventOf<T>> {
      const test = (event: AgentEvent) => event.type === type && predicate(event as AgentEventOf<T>)
      const seen = events.find(test)
      if (seen) return Promise.resolve(seen as AgentEventOf<T>)
      const waiter = deferred<AgentEvent>()
      waiters.push({ test, resolve: waiter.resolve })
      return within(waiter.promise as Promise<AgentEventOf<T>>, timeoutMs, `agent event ${type}`)
    },
  }
}

/** What the model read for `callId` (from the last request that contains it). */
export function readByModel(provider: ScriptedProvider, callId: string): string | undefined {
  for (let i = provider.requests.length - 1; i >= 0; i--) {
    const messages: Message[] = provider.requests[i]?.messages ?? []
    const found = messages.find((m): m is ToolMessage => m.role === 'tool' && m.tool_call_id === callId)
    if (found) return found.content
  }
  return undefined
}

/** An audit log that remembers the entries and lets the test wait until every write has been stored. */
export function trackedAudit(inner?: AuditLog) {
  const entries: AuditEntry[] = []
  const pending: Promise<unknown>[] = []
  const log: AuditLog = {
    record(entry) {
      entries.push(entry)
      const result = inner?.record(entry)
      if (result) pending.push(result)
      return result
    },
  }
  return {
    log,
    entries,
    of: (kind: AuditEntry['kind']) => entries.filter((e) => e.kind === kind),
    settled: () => Promise.all(pending),
  }
}

// ---- rejections ----

/** Collects the `rejection` messages published on `<prefix>.errors.>`. */
export async function watchRejections(bus: Bus, subjects: Subjects) {
  const rejections: RejectionMessage[] = []
  const invalid: string[] = []
  const subscription = bus.subscribe(subjects.errors(), (message) => {
    const decoded = decodeMessage(message.data, RejectionMessage, { maxBytes: bus.maxPayload })
    if (decoded.ok) rejections.push(decoded.value)
    else invalid.push(decoded.error.message)
  })
  await subscription.ready
  return {
    rejections,
    /** Rejection notices that were not themselves valid `rejection` messages (must stay empty). */
    invalid,
    of: (component: string) => rejections.filter((r) => r.component === component),
    /** Waits until `count` rejections of `component` arrived. */
    waitFor: (component: string, count: number, timeoutMs = 3_000) =>
      eventually(
        () => rejections.filter((r) => r.component === component).length >= count,
        timeoutMs,
        `${count} rejection(s) from ${component}`,
      ).then(() => rejections.filter((r) => r.component === component)),
    stop: () => subscription.unsubscribe(),
  }
}

/** 900 KB of text: under the 1 MiB bus maximum, far over any field limit of the protocol. */
export const LARGE = 'x'.repeat(900_000)
/** Over the 1 MiB bus maximum. */
export const OVERSIZED = 'y'.repeat(1024 * 1024 + 16)

// ---- tools ----

/** An irreversible payment tool that needs approval, and the payments it made. */
export function payTool(name = 'pay') {
  const paid: { to: string; amount: number }[] = []
  const t = tool({
    name,
    description: 'Pay someone. Irreversible.',
    schema: z.object({ to: z.string(), amount: z.number() }),
    needsApproval: true,
    execute: (args) => {
      paid.push(args)
      return `paid ${args.amount} to ${args.to}`
    },
  })
  return { tool: t, paid }
}

/** A reversible tool that records its calls. */
export function recordingTool(name: string, output: (args: { x: string }) => string = (args) => `${name} ${args.x} ok`) {
  const calls: { x: string }[] = []
  const t = tool({
    name,
    description: `Does ${name}.`,
    schema: z.object({ x: z.string() }),
    execute: (args) => {
      calls.push(args)
      return output(args)
    },
  })
  return { tool: t, calls }
}
