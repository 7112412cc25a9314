/**
 * The inspector every transport shares: XState inspection in (`inspect`, for `createAgent({ inspect })`),
 * converted and privacy-filtered wire events out (`send`), plus a manual API so actors that are not
 * XState machines (reviewer services, tool hosts) appear in the inspector and its sequence view.
 */
import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { assertToken } from '@signalbox/core/internal'
import type { InspectionEvent, Observer } from 'xstate'
import {
  createInspectionConverter,
  globalSessionId,
  type InspectedEventObject,
  type InspectedSnapshot,
  type InspectorWireEvent,
  publicEvent,
  redactContext,
  STATELY_INSPECT_VERSION,
  toJsonValue,
} from './convert.ts'

export interface InspectorOptions {
  /**
   * This process's id in every session id it sends (`<runtimeId>:x:3`). One subject token (no `.`,
   * `*`, `>`, spaces). Default `<host>-<pid>-<random>`, unique per process.
   */
  runtimeId?: string
  /**
   * Explicit opt-in: send message contents, tool arguments and results, actor inputs and outputs.
   * Default false: state values, tags, ids and counters only.
   */
  includeContents?: boolean
  /** Clock for `createdAt`. Default `Date.now`. */
  now?: () => number
  /** Called when converting or sending fails (never thrown into the agent). Default: ignored. */
  onError?: (error: unknown) => void
}

/** The manual half: for actors that are not XState machines. Ids are local unless they start with `run:`. */
export interface ManualInspector {
  readonly runtimeId: string
  readonly includeContents: boolean
  /** The global id of a local participant: `reviewer` → `<runtimeId>:reviewer`; `run:<runId>` is kept. */
  sessionId(id: string): string
  /** Announces an actor (shown in the inspector's actor list). */
  actor(id: string, name?: string, snapshot?: InspectedSnapshot, info?: { parentId?: string }): void
  /** A message from `from` (undefined: from outside) to `to`: an arrow in the sequence view. */
  event(from: string | undefined, to: string, event: InspectedEventObject | string): void
  /** A new state of a manually announced actor. */
  snapshot(id: string, snapshot: InspectedSnapshot, event?: InspectedEventObject | string): void
}

export interface Inspector extends ManualInspector {
  /** Pass as `createAgent({ inspect: inspector.inspect })` or `createActor(machine, { inspect })`. */
  readonly inspect: Observer<InspectionEvent>
}

export interface StatelyInspectorOptions extends InspectorOptions {
  /** Where converted events go (a WebSocket, the bus...). Must not throw; errors go to `onError`. */
  send(event: InspectorWireEvent): void
}

/** A process-unique runtime id usable as a subject token: `<host>-<pid>-<hex>`. */
export function defaultRuntimeId(): string {
  const host =
    hostname()
      .split('.')[0]
      ?.replace(/[^A-Za-z0-9_-]/g, '') || 'host'
  return `${host.slice(0, 40)}-${process.pid}-${randomBytes(3).toString('hex')}`
}

/**
 * Builds an inspector around any `send`. `createLocalInspector` (WebSocket to the Stately bridge) and
 * `createBusInspector` (the bus) are this with a transport.
 */
export function createStatelyInspector(options: StatelyInspectorOptions): Inspector {
  const runtimeId = assertToken(options.runtimeId ?? defaultRuntimeId())
  const includeContents = options.includeContents === true
  const now = options.now ?? Date.now
  const onError = options.onError ?? (() => {})
  const converter = createInspectionConverter({ runtimeId, includeContents, now })
  let flushScheduled = false

  const send = (event: InspectorWireEvent) => {
    try {
      options.send(event)
    } catch (error) {
      report(error)
    }
  }
  const report = (error: unknown) => {
    try {
      onError(error)
    } catch {
      // nothing left to report to
    }
  }
  const flush = () => {
    flushScheduled = false
    try {
      for (const event of converter.flush()) send(event)
    } catch (error) {
      report(error)
    }
  }

  const sessionId = (id: string) => globalSessionId(runtimeId, id)
  const eventObject = (event: InspectedEventObject | string | undefined): InspectedEventObject =>
    event === undefined ? { type: '' } : publicEvent(event, includeContents)
  const snapshotObject = (snapshot: InspectedSnapshot | undefined): InspectedSnapshot => {
    if (!snapshot) return { status: 'active' }
    if (includeContents) return toJsonValue(snapshot, 0, []) as InspectedSnapshot
    const out: InspectedSnapshot = { status: snapshot.status ?? 'active' }
    if (snapshot.value !== undefined) out.value = toJsonValue(snapshot.value, 0, [])
    if (snapshot.context !== undefined) out.context = redactContext(snapshot.context)
    if (Array.isArray(snapshot.tags)) out.tags = snapshot.tags.filter((tag) => typeof tag === 'string')
    return out
  }
  const stamp = (id: string) => ({
    sessionId: id,
    createdAt: String(now()),
    id: converter.nextId(),
    _version: STATELY_INSPECT_VERSION,
  })

  return {
    runtimeId,
    includeContents,
    sessionId,
    inspect: {
      next(event: InspectionEvent) {
        // Called inside the actor's macrostep: never throw, never block.
        try {
          for (const wire of converter.convert(event)) send(wire)
          if (converter.hasPending && !flushScheduled) {
            flushScheduled = true
            queueMicrotask(flush)
          }
        } catch (error) {
          report(error)
        }
      },
      error: () => {},
      complete: () => {},
    },
    actor(id, name, snapshot, info) {
      const global = sessionId(id)
      const label = name ?? id
      send({
        type: '@xstate.actor',
        ...stamp(global),
        rootId: global,
        name: label,
        definition: JSON.stringify({ id: label }),
        parentId: info?.parentId === undefined ? undefined : sessionId(info.parentId),
        snapshot: snapshotObject(snapshot),
      })
    },
    event(from, to, event) {
      const target = sessionId(to)
      send({
        type: '@xstate.event',
        ...stamp(target),
        rootId: target,
        event: eventObject(event),
        sourceId: from === undefined ? undefined : sessionId(from),
      })
    },
    snapshot(id, snapshot, event) {
      const global = sessionId(id)
      send({
        type: '@xstate.snapshot',
        ...stamp(global),
        rootId: global,
        event: eventObject(event),
        snapshot: snapshotObject(snapshot),
      })
    },
  }
}
