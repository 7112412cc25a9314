/** What an agent is made of and what its runs give back: options, results, the run handle, the default audit log. */
import type { Actor, InspectionEvent, Observer } from 'xstate'
import type { Clock } from './clock.ts'
import { type SerializedError, SignalboxError } from './errors.ts'
import type { RunStatus } from './events.ts'
import type { HandoffResult } from './handoff.ts'
import type { AuditEntry, AuditLog, Reviewer } from './hitl/types.ts'
import type { Hooks } from './hooks.ts'
import type { IdGenerator } from './ids.ts'
import type { AgentMachine } from './machine/agent-machine.ts'
import type { SteeringItem, StopReason } from './machine/context.ts'
import type { BudgetCheck, RetryPolicy, SteeringPolicy } from './machine/runtime.ts'
import type { Message, Usage } from './messages.ts'
import type { Provider } from './provider/provider.ts'
import type { Schema } from './schema.ts'
import type { RunStore } from './store/run-store.ts'
import type { ApprovalRequestOf, ToolList } from './tool-calls.ts'

/**
 * `T`: the agent's tools, as `createAgent` infers them from `tools`; it types what the tool hooks
 * and the reviewer see of a call (`toolName` and the arguments, per tool).
 */
export interface AgentOptions<T extends ToolList = ToolList> {
  /** The agent's id on the bus and in events. Default `agent`. */
  id?: string
  provider: Provider
  tools?: T
  hooks?: Hooks<T> | Hooks<T>[]
  /** The system prompt. */
  instructions?: string
  /** Turns (model calls) before the run fails with `MAX_TURNS_EXCEEDED`. Default 10. */
  maxTurns?: number
  /**
   * Decides on calls to tools that need approval. Without one, such calls are denied. The requests
   * it gets are typed by `tools` (`ApprovalRequestOf`): `arguments` per tool, by `toolName`.
   */
  reviewer?: Reviewer<ApprovalRequestOf<T>>
  /** Where decisions, timeouts, steering and answers are recorded. Default: in memory (`agent.audit`). */
  audit?: AuditLog
  /** How long a reviewer has before the call is denied by default. Default 5 minutes. */
  approvalTimeoutMs?: number
  /** `cancel-next` (default) cancels the next tool call; `cancel-batch` the rest of the reply's calls. */
  steeringPolicy?: SteeringPolicy
  retry?: Partial<RetryPolicy>
  clock?: Clock
  ids?: IdGenerator
  /** XState inspection (e.g. the Stately inspector's `inspect`). */
  inspect?: Observer<InspectionEvent> | ((event: InspectionEvent) => void)
  /** Called when an event listener or the audit log throws. Default: ignore. */
  onInternalError?: (error: unknown, where: string) => void
  /**
   * Keeps runs outside the process (`FileRunStore`, `KvRunStore`): checkpointed at settled
   * boundaries, resumed with `agent.resume()`. Without one, a run lives in its process.
   */
  store?: RunStore
  /** Who owns the runs this agent drives (stable across restarts of one host). Default: the host name. */
  hostId?: string
  /** How long a run's lease lasts without a write; renewed every third of it. Default 30 s. */
  leaseMs?: number
  /**
   * With a `store` and `afterToolExecution` hooks: also store each tool's raw output (before the
   * hooks). Default false: a store keeps only what the model read, so data a hook masked for the
   * model is never written. With true, a run cut off between a tool's end and its hooks resumes
   * with the tool's result instead of reading its outcome as unknown.
   */
  storeRawToolOutput?: boolean
  /**
   * A zod schema the final answer must match (zod 4, `zod/v4` of zod 3.25, or zod 3). It is sent as `response_format` (JSON Schema, strict
   * when the schema allows), the answer is parsed and checked, the model gets one retry with the
   * problems, then the run fails with `OutputValidationError` (`OUTPUT_INVALID`). `result.output`
   * is then the parsed value, typed from the schema.
   */
  output?: Schema
}

export interface RunOptions {
  signal?: AbortSignal
  runId?: string
  /** Parent run when this run is a child in a run tree (delegation). */
  parentRunId?: string
  /** Run ids from the root down to the parent. */
  runPath?: string[]
  /** Agent ids of `runPath`'s runs, in the same order (who the ancestors are). */
  agentPath?: string[]
  /** Lowers the agent's `maxTurns` for this run (a run tree passes down what is left). */
  maxTurns?: number
  /** Token budget for this run: past it, the run fails with `BUDGET_EXCEEDED` before the next turn. */
  maxTokens?: number
  /**
   * Asked before every turn: an error (`{ code, message }`) fails the run with it before the model
   * is called (stop reason `budget`). A run tree uses it for the budget its runs share.
   */
  budget?: BudgetCheck
  /**
   * The limits of the run tree this run belongs to, as its parent sent them (depth, turns, tokens,
   * runs): kept with the run, so whoever continues it after a crash holds its children to them.
   */
  treeLimits?: Readonly<Record<string, number>>
}

export interface RunResult<TOutput = string> {
  runId: string
  status: RunStatus
  /** The model's final answer (status `done`): its text, or with `output` set, the parsed value. */
  output: TOutput
  stopReason: StopReason | undefined
  error: SerializedError | undefined
  turns: number
  usage: Usage
  messages: Message[]
  /** Corrections that arrived after the last tool boundary and were never delivered. */
  pendingSteering: SteeringItem[]
  /** Set when the run handed the conversation over (`stopReason: 'handoff'`). */
  handoff?: HandoffResult
}

/** A run failed (`failed`) or was cancelled; `result` holds the transcript so far. */
export class RunFailedError extends SignalboxError {
  readonly result: RunResult
  constructor(result: RunResult) {
    const error = result.error ?? { code: 'RUN_FAILED', message: 'The run failed.' }
    super(error.code, error.message, {
      ...(error.fault ? { fault: error.fault } : {}),
      details: { ...error.details, runId: result.runId, status: result.status },
    })
    this.result = result
  }
}

export interface RunHandle<TOutput = string> {
  readonly runId: string
  /**
   * The run's XState actor, a root actor. Its `system` is shared by the agent's runs (unless the
   * agent has `inspect`, which gives each run a system of its own).
   */
  readonly actor: Actor<AgentMachine>
  /** Resolves with the result when the run is `done`; rejects with `RunFailedError` otherwise. */
  readonly result: Promise<RunResult<TOutput>>
  steer(text: string, options?: { from?: string }): void
  /** `by`: who cancels (a pending approval request is withdrawn saying so). */
  cancel(reason?: string, options?: { by?: string }): void
}

/** Keeps the audit trail in memory; the default when no `audit` log is given. */
export class MemoryAuditLog implements AuditLog {
  readonly entries: AuditEntry[] = []
  record(entry: AuditEntry): void {
    this.entries.push(entry)
  }
}
