import { ConfigError, HookError } from './errors.ts'
import type { AssistantMessage, Message, ToolMessage } from './messages.ts'
import type { ToolSpec } from './provider/provider.ts'
import type { ToolCallOf, ToolList } from './tool-calls.ts'

/**
 * Hooks change the loop; events only watch it. Each hook is called at a fixed point and the
 * loop obeys what it returns. All are optional and may be async. A hook that throws fails the
 * run (fail closed) with a `HookError` naming the point.
 */
export const HOOK_POINTS = ['beforeTurn', 'beforeProviderCall', 'beforeToolExecution', 'afterToolExecution', 'afterTurn'] as const
export type HookPoint = (typeof HOOK_POINTS)[number]

interface HookContextBase {
  agentId: string
  runId: string
  turn: number
  /** Aborts when the run is cancelled. */
  signal: AbortSignal
}

export interface BeforeTurnContext extends HookContextBase {
  messages: readonly Message[]
}
/** Return `{ stop: true, reason }` to end the run before this turn (e.g. a budget). */
export type BeforeTurnResult = undefined | { stop: true; reason: string }

export interface BeforeProviderCallContext extends HookContextBase {
  /** What would be sent: a copy; return a new list to change it. */
  messages: Message[]
  /**
   * The tools that would be offered, each `{ name, description, parameters }` (`parameters` is the
   * JSON Schema of the arguments): a copy; return a filtered list to hide some for this turn. A
   * hidden tool is unknown for the turn: a call to it gets an `unknown_tool` error and never runs.
   */
  tools: ToolSpec[]
}
/** Return messages (trim, add context) and/or tools (hide one for this turn). */
export type BeforeProviderCallResult = undefined | Message[] | { messages?: Message[]; tools?: ToolSpec[] }

/**
 * `toolName` and `input` (the validated arguments). Typed by the agent's tools (`T`): a union on
 * `toolName`, so `if (toolName === 'book_ticket') input.seat_class` needs no cast. Untyped
 * (`toolName: string`, `input: unknown`) without `T`.
 */
export type BeforeToolExecutionContext<T extends ToolList = ToolList> = HookContextBase & { callId: string } & ToolCallOf<T>

export type ToolGate =
  | { action: 'allow' }
  /** The tool never runs; the model reads `reason` as an error result. */
  | { action: 'deny'; reason: string }
  /** The tool never runs; the model reads `result` as if the tool had returned it. */
  | { action: 'respond'; result: string }

/**
 * What a beforeToolExecution hook returns. The seeds' shape `{ authorize, mockResult }` is
 * accepted too: `{ authorize: false, mockResult }` denies with that reason.
 */
export type BeforeToolExecutionResult = undefined | ToolGate | { authorize: boolean; mockResult?: string }

/** The call (`toolName`, `input`: typed as in `BeforeToolExecutionContext`) and what it gave. */
export type AfterToolExecutionContext<T extends ToolList = ToolList> = HookContextBase & {
  callId: string
  /** What the model would read. */
  output: string
  isError: boolean
} & ToolCallOf<T>
/** Return the text the model will read (or `{ output, isError }`); nothing keeps it as is. */
export type AfterToolExecutionResult = undefined | string | { output: string; isError?: boolean }

export interface AfterTurnContext extends HookContextBase {
  reply: AssistantMessage
  toolResults: readonly ToolMessage[]
  messages: readonly Message[]
}

type MaybePromise<T> = T | Promise<T>

/**
 * The hook points. `Hooks<typeof tools>` (what `createAgent` infers from its `tools`) types the
 * tool hooks' `toolName` and `input` per tool; plain `Hooks` works for any agent.
 */
export interface Hooks<T extends ToolList = ToolList> {
  beforeTurn?: (context: BeforeTurnContext) => MaybePromise<BeforeTurnResult | void>
  beforeProviderCall?: (context: BeforeProviderCallContext) => MaybePromise<BeforeProviderCallResult | void>
  beforeToolExecution?: (context: BeforeToolExecutionContext<T>) => MaybePromise<BeforeToolExecutionResult | void>
  afterToolExecution?: (context: AfterToolExecutionContext<T>) => MaybePromise<AfterToolExecutionResult | void>
  afterTurn?: (context: AfterTurnContext) => MaybePromise<void>
}

export const allow = (): ToolGate => ({ action: 'allow' })
export const deny = (reason: string): ToolGate => ({ action: 'deny', reason })
export const respond = (result: string): ToolGate => ({ action: 'respond', result })

/**
 * Several hook sets compose in order. Rewrites chain (each sees the previous one's result);
 * a deny or a ready answer stops the `beforeToolExecution` chain; the first stop ends the run.
 */
export class HookChain {
  readonly #sets: Hooks[]
  readonly #present: Set<HookPoint>

  constructor(hooks: Hooks | Hooks[] | undefined) {
    this.#sets = hooks === undefined ? [] : Array.isArray(hooks) ? [...hooks] : [hooks]
    this.#present = new Set()
    for (const set of this.#sets) {
      for (const [key, fn] of Object.entries(set)) {
        if (fn === undefined) continue
        if (!(HOOK_POINTS as readonly string[]).includes(key)) {
          throw new ConfigError(`Unknown hook "${key}". Hook points are: ${HOOK_POINTS.join(', ')}.`)
        }
        if (typeof fn !== 'function') throw new ConfigError(`Hook "${key}" must be a function.`)
        this.#present.add(key as HookPoint)
      }
    }
  }

  has(point: HookPoint): boolean {
    return this.#present.has(point)
  }

  async beforeTurn(context: BeforeTurnContext): Promise<BeforeTurnResult> {
    for (const set of this.#sets) {
      if (!set.beforeTurn) continue
      const result = await guard('beforeTurn', () => set.beforeTurn?.(context))
      if (result === undefined || result === null) continue
      if (typeof result === 'object' && result.stop === true) {
        if (typeof result.reason !== 'string') throw new HookError('beforeTurn', 'a stop needs a reason (string)')
        return result
      }
      throw new HookError('beforeTurn', `returned ${describe(result)}; expected nothing or { stop: true, reason }`)
    }
    return undefined
  }

  async beforeProviderCall(context: BeforeProviderCallContext): Promise<{ messages: Message[]; tools: ToolSpec[] }> {
    let { messages, tools } = context
    for (const set of this.#sets) {
      if (!set.beforeProviderCall) continue
      const result = await guard('beforeProviderCall', () =>
        set.beforeProviderCall?.(
          // The same object while nothing changed: a copy would read (and so make) its lazy signal.
          messages === context.messages && tools === context.tools ? context : { ...context, messages, tools },
        ),
      )
      if (result === undefined || result === null) continue
      if (Array.isArray(result)) {
        messages = result
      } else if (typeof result === 'object') {
        if (result.messages !== undefined) messages = result.messages
        if (result.tools !== undefined) tools = result.tools
      } else {
        throw new HookError('beforeProviderCall', `returned ${describe(result)}; expected messages or { messages, tools }`)
      }
      if (!Array.isArray(messages) || !Array.isArray(tools)) {
        throw new HookError('beforeProviderCall', 'messages and tools must be arrays')
      }
    }
    return { messages, tools }
  }

  async beforeToolExecution(context: BeforeToolExecutionContext): Promise<ToolGate> {
    for (const set of this.#sets) {
      if (!set.beforeToolExecution) continue
      const result = await guard('beforeToolExecution', () => set.beforeToolExecution?.(context))
      const gate = normalizeGate(result)
      if (gate.action !== 'allow') return gate
    }
    return { action: 'allow' }
  }

  async afterToolExecution(context: AfterToolExecutionContext): Promise<{ output: string; isError: boolean }> {
    let { output, isError } = context
    for (const set of this.#sets) {
      if (!set.afterToolExecution) continue
      const result = await guard('afterToolExecution', () =>
        set.afterToolExecution?.(
          output === context.output && isError === context.isError ? context : { ...context, output, isError },
        ),
      )
      if (result === undefined || result === null) continue
      if (typeof result === 'string') {
        output = result
      } else if (typeof result === 'object' && typeof result.output === 'string') {
        output = result.output
        if (typeof result.isError === 'boolean') isError = result.isError
      } else {
        throw new HookError('afterToolExecution', `returned ${describe(result)}; expected a string or { output }`)
      }
    }
    return { output, isError }
  }

  async afterTurn(context: AfterTurnContext): Promise<void> {
    for (const set of this.#sets) {
      if (set.afterTurn) await guard('afterTurn', () => set.afterTurn?.(context))
    }
  }
}

function normalizeGate(result: unknown): ToolGate {
  if (result === undefined || result === null) return { action: 'allow' }
  if (typeof result !== 'object') throw new HookError('beforeToolExecution', `returned ${describe(result)}`)
  const r = result as Record<string, unknown>
  if ('action' in r) {
    if (r.action === 'allow') return { action: 'allow' }
    if (r.action === 'deny' && typeof r.reason === 'string') return { action: 'deny', reason: r.reason }
    if (r.action === 'respond' && typeof r.result === 'string') return { action: 'respond', result: r.result }
  } else if (typeof r.authorize === 'boolean') {
    const mock = typeof r.mockResult === 'string' ? r.mockResult : undefined
    if (!r.authorize) return { action: 'deny', reason: mock ?? 'Rejected by policy.' }
    return mock === undefined ? { action: 'allow' } : { action: 'respond', result: mock }
  }
  throw new HookError(
    'beforeToolExecution',
    `returned ${describe(result)}; expected allow(), deny(reason), respond(result) or { authorize, mockResult }`,
  )
}

/**
 * A hook's answer, its failure (thrown or rejected) a `HookError` naming the hook point. Without an
 * `async` wrapper: one promise and one tick less for every hook called.
 */
function guard<T>(point: HookPoint, fn: () => T | Promise<T>): Promise<T> {
  let result: T | Promise<T>
  try {
    result = fn()
  } catch (error) {
    return Promise.reject(asHookError(point, error))
  }
  return Promise.resolve(result).then(undefined, rethrowAs[point]) as Promise<T>
}

function asHookError(point: HookPoint, error: unknown): HookError {
  return HookError.is(error) ? error : new HookError(point, error)
}

/** One rejection handler per hook point, made once. */
const rethrowAs = Object.fromEntries(
  HOOK_POINTS.map((point) => [
    point,
    (error: unknown): never => {
      throw asHookError(point, error)
    },
  ]),
) as Record<HookPoint, (error: unknown) => never>

function describe(value: unknown): string {
  try {
    return `${typeof value} ${JSON.stringify(value)?.slice(0, 100)}`
  } catch {
    return typeof value
  }
}
