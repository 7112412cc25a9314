import type { SerializedError } from './errors.ts'
import type { ApprovalDecision, ApprovalRequest, Question } from './hitl/types.ts'
import type { AssistantMessage, Message, Usage } from './messages.ts'

/**
 * Observe-only events. They are emitted after the hooks (a masked ID stays masked) and carry
 * copies: a listener can neither change nor break the run.
 */
interface EventBase {
  agentId: string
  runId: string
  /** Run ids from the root of the run tree down to this run's parent (empty for a root run). */
  runPath: string[]
  /** Agent ids of the `runPath` runs, root first (child runs only). */
  agentPath?: string[]
  parentRunId?: string
  /** Epoch milliseconds on the agent's clock. */
  at: number
}

import type { RunStatus } from './run-status.ts'

export type { RunStatus }

/** How a tool call ended, from the model's point of view. */
export type ToolOutcome =
  | 'executed'
  | 'failed'
  | 'timeout'
  | 'denied'
  | 'responded'
  | 'approval_denied'
  | 'approval_timeout'
  /** No reviewer could decide at all (none configured, or the reviewer's connection failed): denied at once. */
  | 'approval_unavailable'
  | 'steered'
  | 'invalid_arguments'
  | 'unknown_tool'
  /** A crash cut the call off after it started; it was not run again (the tool is not idempotent). */
  | 'outcome_unknown'

export type AgentEvent = EventBase &
  /** `resumed`: a stored run this process continues (after a restart or a takeover); `input` is its first input. */
  (
    | { type: 'run.start'; input: string; resumed?: true }
    | {
        type: 'run.end'
        status: RunStatus
        output?: string
        error?: SerializedError
        turns: number
        usage: Usage
        /** Set when the run handed the conversation to another agent (`to`), which continues it. */
        handoff?: { to: string; reason?: string }
      }
    | { type: 'run.error'; error: SerializedError }
    | { type: 'turn.start'; turn: number }
    | { type: 'turn.end'; turn: number; toolCalls: number }
    | { type: 'model.request'; turn: number; attempt: number; messages: Message[]; tools: string[] }
    | {
        type: 'model.response'
        turn: number
        message: AssistantMessage
        finishReason: string
        usage?: Usage
        durationMs: number
        /** The model that answered, as the endpoint reported it. */
        model?: string
        /** The reply's id, as the endpoint gave it. */
        responseId?: string
      }
    | { type: 'model.retry'; turn: number; attempt: number; delayMs: number; error: SerializedError }
    | { type: 'text.delta'; turn: number; delta: string }
    | { type: 'tool.start'; callId: string; toolName: string; arguments: unknown }
    | {
        type: 'tool.end'
        callId: string
        toolName: string
        /** Exactly what the model will read (after `afterToolExecution`). */
        output: string
        isError: boolean
        outcome: ToolOutcome
        /** How long the tool ran (from `tool.start`); 0 when it did not run. Not the hooks, not a person's wait. */
        durationMs: number
      }
    | { type: 'approval.requested'; request: ApprovalRequest }
    | { type: 'approval.decided'; request: ApprovalRequest; decision: ApprovalDecision; latencyMs: number }
    | { type: 'approval.timeout'; request: ApprovalRequest }
    /** No reviewer could decide (none configured, or it failed): denied at once. */
    | { type: 'approval.unavailable'; request: ApprovalRequest; reason: string }
    | { type: 'approval.rejected'; request?: ApprovalRequest; decision: unknown; reason: string }
    | { type: 'steering.queued'; text: string; from: string }
    | { type: 'steering.applied'; callId: string; toolName: string; text: string; from: string }
    | { type: 'question.asked'; question: Question }
    | { type: 'question.answered'; question: Question; answer: string; answeredBy: string; latencyMs: number }
    | { type: 'question.timeout'; question: Question }
  )

export type AgentEventType = AgentEvent['type']
export type AgentEventOf<T extends AgentEventType> = Extract<AgentEvent, { type: T }>

export type EventListener<T extends AgentEventType | '*'> = (
  event: T extends AgentEventType ? AgentEventOf<T> : AgentEvent,
) => void

/** Every event type, for docs, the CLI and exhaustiveness tests. */
export const AGENT_EVENT_TYPES = [
  'run.start',
  'run.end',
  'run.error',
  'turn.start',
  'turn.end',
  'model.request',
  'model.response',
  'model.retry',
  'text.delta',
  'tool.start',
  'tool.end',
  'approval.requested',
  'approval.decided',
  'approval.timeout',
  'approval.unavailable',
  'approval.rejected',
  'steering.queued',
  'steering.applied',
  'question.asked',
  'question.answered',
  'question.timeout',
] as const satisfies readonly AgentEventType[]

/**
 * A tiny typed emitter. Listener errors are caught and handed to `onListenerError`, never
 * to the run. Payloads are frozen, so a listener cannot change the run's state through them.
 * They are frozen in place, not copied: the transcript's messages are frozen when they join it,
 * so freezing an event that carries the transcript costs one check per message, where a deep
 * copy per event made a long run quadratic (see BENCHMARKS.md).
 */
export class EventEmitter {
  readonly #listeners = new Map<string, Set<(event: AgentEvent) => void>>()
  readonly #onListenerError: (error: unknown, event: AgentEvent) => void

  constructor(options: { onListenerError?: (error: unknown, event: AgentEvent) => void } = {}) {
    this.#onListenerError = options.onListenerError ?? (() => {})
  }

  on<T extends AgentEventType | '*'>(type: T, listener: EventListener<T>): () => void {
    let set = this.#listeners.get(type)
    if (!set) {
      set = new Set()
      this.#listeners.set(type, set)
    }
    const fn = listener as (event: AgentEvent) => void
    set.add(fn)
    return () => {
      set.delete(fn)
    }
  }

  /** Lets the emitter skip building payloads nobody listens to (the hot path). */
  has(type: AgentEventType): boolean {
    return (this.#listeners.get(type)?.size ?? 0) > 0 || (this.#listeners.get('*')?.size ?? 0) > 0
  }

  emit(event: AgentEvent): void {
    const exact = this.#listeners.get(event.type)
    const any = this.#listeners.get('*')
    if (!exact?.size && !any?.size) return
    const frozen = this.#copy(event)
    if (!frozen) return
    if (exact) for (const listener of exact) this.#call(listener, frozen)
    if (any) for (const listener of any) this.#call(listener, frozen)
  }

  /** The event, frozen; emitting never throws into the run. */
  #copy(event: AgentEvent): AgentEvent | undefined {
    try {
      return deepFreeze(event)
    } catch (error) {
      this.#reportSafely(error, event)
      return undefined
    }
  }

  #reportSafely(error: unknown, event: AgentEvent): void {
    try {
      this.#onListenerError(error, event)
    } catch {
      // The error handler failed too: nothing left to tell, and the run must go on.
    }
  }

  #call(listener: (event: AgentEvent) => void, event: AgentEvent): void {
    try {
      const result = listener(event) as unknown
      // An async listener's rejection must not become an unhandled rejection either.
      if (result && typeof (result as Promise<unknown>).catch === 'function') {
        ;(result as Promise<unknown>).catch((error) => this.#reportSafely(error, event))
      }
    } catch (error) {
      this.#reportSafely(error, event)
    }
  }
}

/** Freezes `value` and everything it holds, stopping at what is already frozen. */
export function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value)
    for (const key of Object.keys(value)) deepFreeze((value as Record<string, unknown>)[key])
  }
  return value
}
