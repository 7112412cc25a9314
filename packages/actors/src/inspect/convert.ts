/**
 * XState inspection events → the Stately inspector's wire format (the shape `@statelyai/inspect`'s
 * `convertXStateEvent` produces: `@xstate.actor` / `@xstate.event` / `@xstate.snapshot` with
 * `sessionId`, `rootId`, `createdAt`...), with two changes that matter for signalbox:
 *
 * - **Session ids are unique across processes.** XState numbers actors per process (`x:0`, `x:1`...),
 *   so two runtimes collide. A root agent run becomes `run:<runId>` (run ids are UUIDs); every other
 *   actor becomes `<runtimeId>:<sessionId>`. `rootId`, `parentId` and `sourceId` are mapped the same way.
 * - **Private by default.** Snapshots keep the state value, status, tags and a redacted context (ids,
 *   counters, the current call's `callId` / `toolName`); events keep their `type` and a few safe ids.
 *   Message contents, tool arguments and results, steering text, reasons, actor inputs and outputs
 *   never leave the process unless `includeContents: true` is passed explicitly.
 *
 * Microsteps, transitions and actions are dropped (as the Stately converter does).
 */
import type { InspectionEvent } from 'xstate'

/** `_version` on every event: the `@statelyai/inspect` release whose wire format this follows. */
export const STATELY_INSPECT_VERSION = '0.7.2'

/** A snapshot as the inspector receives it (plain JSON). */
export interface InspectedSnapshot {
  status?: 'active' | 'done' | 'error' | 'stopped'
  value?: unknown
  context?: unknown
  output?: unknown
  error?: unknown
  tags?: string[]
  [key: string]: unknown
}

/** An event as the inspector receives it: always a `type`, the rest depends on the privacy mode. */
export interface InspectedEventObject {
  type: string
  [key: string]: unknown
}

interface WireBase {
  sessionId: string
  rootId: string | undefined
  /** Milliseconds since the epoch, as a string (like `@statelyai/inspect`). */
  createdAt: string
  /** Unique per event (`<runtimeId>:<n>`). */
  id: string
  _version: string
}

export interface InspectorActorEvent extends WireBase {
  type: '@xstate.actor'
  name: string
  /** The machine config as JSON (functions replaced by `{ type: name }`), or `{"id":name}` for other actors. */
  definition: string | undefined
  parentId: string | undefined
  snapshot: InspectedSnapshot
}

export interface InspectorEventEvent extends WireBase {
  type: '@xstate.event'
  event: InspectedEventObject
  sourceId: string | undefined
}

export interface InspectorSnapshotEvent extends WireBase {
  type: '@xstate.snapshot'
  event: InspectedEventObject
  snapshot: InspectedSnapshot
}

/** One event on the wire (WebSocket, bus, JSONL record). */
export type InspectorWireEvent = InspectorActorEvent | InspectorEventEvent | InspectorSnapshotEvent

export const INSPECTOR_EVENT_TYPES = ['@xstate.actor', '@xstate.event', '@xstate.snapshot'] as const

/** True for anything shaped like an inspector wire event (used to validate what comes off the bus). */
export function isInspectorWireEvent(value: unknown): value is InspectorWireEvent {
  if (!value || typeof value !== 'object') return false
  const event = value as { type?: unknown; sessionId?: unknown }
  return (
    typeof event.sessionId === 'string' &&
    (event.type === '@xstate.actor' || event.type === '@xstate.event' || event.type === '@xstate.snapshot')
  )
}

export interface ConverterOptions {
  /** This runtime's id: prefixes every non-run session id. One token: letters, digits, `_`, `-`. */
  runtimeId: string
  /** Pass message contents, tool arguments and results, inputs and outputs through. Default false. */
  includeContents?: boolean
  /** Clock for `createdAt`. Default `Date.now`. */
  now?: () => number
}

export interface InspectionConverter {
  readonly runtimeId: string
  readonly includeContents: boolean
  /**
   * Converts one XState inspection event. Returns zero or more wire events: an actor's registration
   * is held until its first snapshot exists (XState announces an actor before initializing it), so
   * it is released just before the next event that needs it.
   */
  convert(event: InspectionEvent): InspectorWireEvent[]
  /** Releases every held registration (with `{ status: 'active' }` if an actor still has no snapshot). */
  flush(): InspectorWireEvent[]
  /** True while registrations are held (call `flush` soon, e.g. in a microtask). */
  readonly hasPending: boolean
  /** The global session id of an XState actor. */
  sessionIdOf(actorRef: unknown): string
  /** A fresh event id. */
  nextId(): string
}

/** The parts of an XState `Actor` the converter reads (internal fields included, as `@statelyai/inspect` does). */
interface ActorLike {
  id: string
  sessionId: string
  _parent?: ActorLike
  src?: unknown
  logic?: { config?: unknown }
  getSnapshot(): unknown
}

const RUN_PREFIX = 'run:'
const AGENT_MACHINE_ID = 'agent'

/** The session id of an agent run, in every process: `run:<runId>`. */
export function runSessionId(runId: string): string {
  return `${RUN_PREFIX}${runId}`
}

/**
 * The global id of something in a runtime: `run:` ids (agent runs) are global already; anything else
 * is prefixed `<runtimeId>:` (unless it already is).
 */
export function globalSessionId(runtimeId: string, id: string): string {
  if (id.startsWith(RUN_PREFIX) || id.startsWith(`${runtimeId}:`)) return id
  return `${runtimeId}:${id}`
}

export function createInspectionConverter(options: ConverterOptions): InspectionConverter {
  const { runtimeId } = options
  const includeContents = options.includeContents === true
  const now = options.now ?? Date.now
  const sessionIds = new WeakMap<object, string>()
  const pending: ActorLike[] = []
  let counter = 0

  const nextId = () => `${runtimeId}:${++counter}`

  const sessionIdOf = (value: unknown): string => {
    const ref = value as ActorLike
    const known = sessionIds.get(ref)
    if (known !== undefined) return known
    const id = isAgentRun(ref) ? runSessionId(ref.id) : `${runtimeId}:${ref.sessionId}`
    sessionIds.set(ref, id)
    return id
  }

  const rootOf = (ref: ActorLike): ActorLike => {
    let root = ref
    while (root._parent) root = root._parent
    return root
  }

  const base = (ref: ActorLike): WireBase => ({
    sessionId: sessionIdOf(ref),
    rootId: sessionIdOf(rootOf(ref)),
    createdAt: String(now()),
    id: nextId(),
    _version: STATELY_INSPECT_VERSION,
  })

  const actorEvent = (ref: ActorLike, snapshot: unknown): InspectorActorEvent => {
    const config = machineConfig(ref)
    const name = actorName(ref, config, snapshot)
    let parentId = ref._parent ? sessionIdOf(ref._parent) : undefined
    // A delegated run is a root actor of its own; its parent run is in its context (maybe in another process).
    if (parentId === undefined && isAgentRun(ref)) {
      const parentRunId = (snapshotContext(snapshot) as { run?: { parentRunId?: unknown } } | undefined)?.run?.parentRunId
      if (typeof parentRunId === 'string' && parentRunId !== '') parentId = runSessionId(parentRunId)
    }
    return {
      type: '@xstate.actor',
      ...base(ref),
      name,
      definition: config ? definitionOf(config, includeContents) : JSON.stringify({ id: name }),
      parentId,
      snapshot: snapshot === undefined ? { status: 'active' } : publicSnapshot(snapshot, isAgentMachine(config), includeContents),
    }
  }

  /** Releases held registrations in order, stopping at the first actor that is not initialized yet. */
  const release = (out: InspectorWireEvent[], force: boolean) => {
    while (pending.length > 0) {
      const ref = pending[0] as ActorLike
      const snapshot = currentSnapshot(ref)
      if (snapshot === undefined && !force) return
      pending.shift()
      out.push(actorEvent(ref, snapshot))
    }
  }

  return {
    runtimeId,
    includeContents,
    get hasPending() {
      return pending.length > 0
    },
    sessionIdOf,
    nextId,
    flush() {
      const out: InspectorWireEvent[] = []
      release(out, true)
      return out
    },
    convert(event) {
      const out: InspectorWireEvent[] = []
      switch (event.type) {
        case '@xstate.actor': {
          pending.push(event.actorRef as unknown as ActorLike)
          release(out, false)
          return out
        }
        case '@xstate.event': {
          release(out, false)
          const ref = event.actorRef as unknown as ActorLike
          out.push({
            type: '@xstate.event',
            ...base(ref),
            event: publicEvent(event.event, includeContents),
            sourceId: event.sourceRef ? sessionIdOf(event.sourceRef) : undefined,
          })
          return out
        }
        case '@xstate.snapshot': {
          release(out, false)
          const ref = event.actorRef as unknown as ActorLike
          out.push({
            type: '@xstate.snapshot',
            ...base(ref),
            event: publicEvent(event.event, includeContents),
            snapshot: publicSnapshot(event.snapshot, isAgentMachine(machineConfig(ref)), includeContents),
          })
          return out
        }
        default:
          return out
      }
    },
  }
}

// ---- actors ----

/** The actor's snapshot, or undefined while it initializes (XState's development build throws then). */
function currentSnapshot(ref: ActorLike): unknown {
  if ('_snapshot' in ref) return (ref as { _snapshot?: unknown })._snapshot
  try {
    return ref.getSnapshot()
  } catch {
    return undefined
  }
}

function machineConfig(ref: ActorLike): Record<string, unknown> | undefined {
  const config = ref.logic?.config
  return config && typeof config === 'object' ? (config as Record<string, unknown>) : undefined
}

function isAgentMachine(config: Record<string, unknown> | undefined): boolean {
  return config?.id === AGENT_MACHINE_ID
}

/** A root actor running the agent machine: its id is the run id (`createActor(machine, { id: runId })`). */
function isAgentRun(ref: ActorLike): boolean {
  return ref._parent === undefined && isAgentMachine(machineConfig(ref)) && typeof ref.id === 'string' && ref.id !== ref.sessionId
}

function actorName(ref: ActorLike, config: Record<string, unknown> | undefined, snapshot: unknown): string {
  if (isAgentRun(ref)) {
    const agentId = (snapshotContext(snapshot) as { run?: { agentId?: unknown } } | undefined)?.run?.agentId
    return typeof agentId === 'string' ? `${agentId} ${ref.id}` : ref.id
  }
  // An invoked actor is named by its source (a run's `worker`), clearer than its invoke id.
  if (typeof ref.src === 'string' && ref.src !== '') return ref.src
  if (ref.id === ref.sessionId && typeof config?.id === 'string') return config.id
  return ref.id
}

const definitions = new WeakMap<object, string>()
const privateDefinitions = new WeakMap<object, string>()

/**
 * Where a machine config can hold data rather than structure: a literal initial `context`, static
 * `input`s, action `params`, `output`. Left out of the definition unless contents are opted in.
 */
const DATA_KEYS = new Set(['context', 'input', 'params', 'output'])

/**
 * The machine config as JSON, functions replaced by `{ type: <name> }` (as `@statelyai/inspect`
 * does); without `includeContents`, without the data keys. Computed once per machine and mode.
 */
export function definitionOf(config: object, includeContents = false): string {
  const cache = includeContents ? definitions : privateDefinitions
  let definition = cache.get(config)
  if (definition === undefined) {
    definition = JSON.stringify(toJsonValue(config, 0, [], includeContents ? undefined : DATA_KEYS))
    cache.set(config, definition)
  }
  return definition
}

// ---- privacy ----

function snapshotContext(snapshot: unknown): unknown {
  return snapshot && typeof snapshot === 'object' ? (snapshot as { context?: unknown }).context : undefined
}

function isMachineSnapshot(
  snapshot: object,
): snapshot is { value: unknown; tags?: Set<string>; context?: unknown; children?: Record<string, unknown> } {
  return 'machine' in snapshot && 'value' in snapshot
}

/** What the inspector may see of a snapshot. */
export function publicSnapshot(snapshot: unknown, agent: boolean, includeContents = false): InspectedSnapshot {
  if (!snapshot || typeof snapshot !== 'object') return { status: 'active' }
  if (includeContents) return toJsonValue(snapshot, 0, []) as InspectedSnapshot
  const s = snapshot as { status?: InspectedSnapshot['status']; output?: unknown; error?: unknown }
  const out: InspectedSnapshot = { status: s.status ?? 'active' }
  if (isMachineSnapshot(snapshot)) {
    out.value = toJsonValue(snapshot.value, 0, [])
    out.tags = snapshot.tags instanceof Set ? [...snapshot.tags] : []
    out.context = agent ? redactAgentContext(snapshot.context) : redactContext(snapshot.context)
    const children: Record<string, unknown> = {}
    for (const [key, child] of Object.entries(snapshot.children ?? {})) {
      children[key] = { xstate$$type: 1, id: (child as { id?: unknown })?.id ?? key }
    }
    out.children = children
    out.historyValue = {}
    if (s.status === 'done' && s.output !== undefined) out.output = agent ? redactAgentContext(s.output) : redactContext(s.output)
  }
  // Promise and callback actors: their input is the agent's context and their output a reply or a tool result.
  if (s.status === 'error' && s.error !== undefined) out.error = redactError(s.error)
  return out
}

/** What the inspector may see of an event: its type and a few ids. */
export function publicEvent(event: unknown, includeContents = false): InspectedEventObject {
  if (typeof event === 'string') return { type: event }
  if (!event || typeof event !== 'object') return { type: '' }
  if (includeContents) return toJsonValue(event, 0, []) as InspectedEventObject
  const source = event as Record<string, unknown>
  const out: InspectedEventObject = { type: typeof source.type === 'string' ? source.type : '' }
  pickSafe(source, out)
  const decision = source.decision
  if (decision && typeof decision === 'object') {
    const picked: Record<string, unknown> = {}
    pickSafe(decision as Record<string, unknown>, picked)
    out.decision = picked
  }
  return out
}

/** Ids, names of tools, booleans and numbers that say where things stand, never what was said. */
const SAFE_KEYS = ['requestId', 'callId', 'toolName', 'runId', 'agentId', 'approved', 'ok', 'durationMs', 'code', 'turn'] as const

function pickSafe(source: Record<string, unknown>, target: Record<string, unknown>): void {
  for (const key of SAFE_KEYS) {
    const value = source[key]
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') target[key] = value
  }
}

/** The agent machine's context without contents: ids, counters, status, the current call's id and tool. */
export function redactAgentContext(context: unknown): Record<string, unknown> | undefined {
  if (!context || typeof context !== 'object') return undefined
  const c = context as Record<string, unknown>
  // The run's identity and the model call's counters are nested (see the machine's context); flatten them.
  const run = (c.run && typeof c.run === 'object' ? c.run : {}) as Record<string, unknown>
  const model = (c.model && typeof c.model === 'object' ? c.model : {}) as Record<string, unknown>
  const out: Record<string, unknown> = {}
  const copy = (from: Record<string, unknown>, key: string, as = key) => {
    const value = from[key]
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') out[as] = value
  }
  for (const key of ['agentId', 'runId', 'parentRunId', 'maxTurns', 'startedAt']) copy(run, key)
  for (const key of ['turn', 'status', 'stopReason', 'callIndex', 'turns']) copy(c, key)
  copy(model, 'attempt', 'modelAttempt')
  if (Array.isArray(run.runPath)) out.runPath = run.runPath.filter((id) => typeof id === 'string')
  for (const key of ['messages', 'calls', 'toolResults', 'steering', 'pendingSteering']) {
    const value = c[key]
    if (Array.isArray(value)) out[key] = value.length
  }
  const usage = c.usage as Record<string, unknown> | undefined
  if (usage && typeof usage === 'object') {
    const counts: Record<string, number> = {}
    for (const [key, value] of Object.entries(usage)) if (typeof value === 'number') counts[key] = value
    out.usage = counts
  }
  const current = c.current as Record<string, unknown> | undefined
  if (current && typeof current === 'object') {
    const call: Record<string, unknown> = {}
    if (typeof current.callId === 'string') call.callId = current.callId
    if (typeof current.toolName === 'string') call.toolName = current.toolName
    const approval = current.approval as Record<string, unknown> | undefined
    if (approval && typeof approval === 'object') {
      call.approval = { requestId: approval.requestId, deadline: approval.deadline }
    }
    const result = current.result as Record<string, unknown> | undefined
    if (result && typeof result === 'object') call.result = { outcome: result.outcome, isError: result.isError }
    if (current.invalid && typeof current.invalid === 'object')
      call.invalid = { outcome: (current.invalid as { outcome?: unknown }).outcome }
    out.current = call
  }
  if (c.error !== undefined) out.error = redactError(c.error)
  return out
}

/** Any other machine's context: numbers, booleans, id-like strings, and the length of arrays. */
export function redactContext(context: unknown): Record<string, unknown> | undefined {
  if (!context || typeof context !== 'object') return undefined
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(context as Record<string, unknown>)) {
    if (typeof value === 'number' || typeof value === 'boolean') out[key] = value
    else if (typeof value === 'string' && /(^id$|Id$|^status$)/.test(key)) out[key] = value
    else if (Array.isArray(value)) out[key] = value.length
  }
  return out
}

function redactError(error: unknown): Record<string, unknown> {
  if (!error || typeof error !== 'object') return { code: 'ERROR' }
  const e = error as { code?: unknown; name?: unknown }
  const out: Record<string, unknown> = {}
  if (typeof e.code === 'string') out.code = e.code
  if (typeof e.name === 'string') out.name = e.name
  return out
}

// ---- JSON ----

const MAX_DEPTH = 40

/**
 * Plain JSON of anything: `toJSON` honoured (XState snapshots and actor refs have one), functions
 * become `{ type: <name> }` (as in `@statelyai/inspect`), cycles `"[Circular]"` (shared, non-cyclic
 * references are kept), Sets and Maps arrays and objects.
 */
export function toJsonValue(
  value: unknown,
  depth: number,
  stack: object[],
  omit?: ReadonlySet<string>,
  namesMap = false,
): unknown {
  if (value === null) return null
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      return Number.isFinite(value) ? value : null
    case 'bigint':
      return value.toString()
    case 'function':
      return { type: value.name || 'anonymous' }
    case 'undefined':
    case 'symbol':
      return undefined
  }
  const object = value as object
  if (stack.includes(object)) return '[Circular]'
  if (depth >= MAX_DEPTH) return '[Object]'
  const toJSON = (object as { toJSON?: unknown }).toJSON
  if (typeof toJSON === 'function') {
    const json = toJSON.call(object)
    if (json !== object) return toJsonValue(json, depth, stack, omit, namesMap)
  }
  stack.push(object)
  try {
    if (Array.isArray(object)) return object.map((item) => toJsonValue(item, depth + 1, stack, omit) ?? null)
    if (object instanceof Set) return [...object].map((item) => toJsonValue(item, depth + 1, stack, omit) ?? null)
    if (object instanceof Map) {
      const out: Record<string, unknown> = {}
      for (const [key, item] of object) out[String(key)] = toJsonValue(item, depth + 1, stack, omit)
      return out
    }
    if (object instanceof Error) return { name: object.name, message: object.message, ...plain(object, depth, stack, omit) }
    return plain(object, depth, stack, omit, namesMap)
  } finally {
    stack.pop()
  }
}

/** Config keys whose own keys are names (of states, events, delays), never data keys. */
const NAME_MAPS = new Set(['states', 'on', 'after'])

function plain(
  object: object,
  depth: number,
  stack: object[],
  omit: ReadonlySet<string> | undefined,
  namesMap = false,
): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(object)) {
    if (omit && !namesMap && omit.has(key)) continue
    const item = toJsonValue((object as Record<string, unknown>)[key], depth + 1, stack, omit, NAME_MAPS.has(key))
    if (item !== undefined) out[key] = item
  }
  return out
}
