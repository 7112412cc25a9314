import type { SerializedError } from '../errors.ts'
import type { RunStatus, ToolOutcome } from '../events.ts'
import type { ApprovalDecision, ApprovalRequest } from '../hitl/types.ts'
import type { AssistantMessage, Message, ToolCall, ToolMessage, Usage } from '../messages.ts'
import type { ToolSpec } from '../provider/provider.ts'

/**
 * Everything a run knows, as plain JSON: a snapshot can be persisted and restored. Functions,
 * tools, the provider and the reviewer live in the `AgentRuntime` the actors close over.
 */
export interface AgentContext {
  /** What the run is: set at the start, never changed. */
  run: RunInfo
  /** Set when a tool handed the conversation to another agent: the run ends after this reply. */
  handoff: { to: string; reason?: string } | undefined
  /** The transcript, as the model reads it. */
  messages: Message[]
  turn: number
  usage: Usage
  /** The model call of this turn: what is sent, which attempt, the backoff. */
  model: ModelCallState
  /** The model's reply this turn. */
  reply: AssistantMessage | undefined
  /** Tool calls of this turn's reply, handled one by one, in order. */
  calls: ToolCall[]
  callIndex: number
  current: CurrentCall | undefined
  toolResults: ToolMessage[]
  /** Corrections queued by a person, applied at the next tool call. */
  steering: SteeringItem[]
  /** With the `cancel-batch` policy: the rest of this reply's calls are cancelled too. */
  batchSteered: boolean
  status: RunStatus | 'running' | 'idle'
  output: string | undefined
  error: SerializedError | undefined
  stopReason: StopReason | undefined
}

/*
 * Few top-level keys on purpose: XState copies the context with Object.assign on every assign,
 * and V8's fast path for that stops at about 19 properties (measured: 0.4 µs vs 12 µs a copy).
 */

export interface RunInfo {
  agentId: string
  runId: string
  runPath: string[]
  /** Agent ids of the `runPath` runs, root first (empty for a root run). */
  agentPath: string[]
  parentRunId: string | undefined
  input: string
  maxTurns: number
  /** Token budget of this run (a run tree passes down what is left). */
  maxTokens: number | undefined
  /** The run tree's limits as the parent sent them (absent: none were sent; older snapshots have none). */
  treeLimits?: Readonly<Record<string, number>>
  startedAt: number
}

export interface ModelCallState {
  /** What `beforeProviderCall` decided to send this turn (cleared after the call). */
  outgoing: { messages: Message[]; tools: ToolSpec[] } | undefined
  /** Names of the tools the last request offered, when a hook changed them (undefined: all). */
  offered?: string[] | undefined
  /** Final answers that failed the output schema so far (the model gets one retry). */
  invalidAnswers?: number
  /** Attempt number of the current model call (1 = first try). */
  attempt: number
  retryDelayMs: number
  /** Epoch ms of the next attempt (absolute, so a restored run re-arms it). */
  retryAt: number
  lastError: SerializedError | undefined
  finishReason: string | undefined
}

export type StopReason =
  | 'final_answer'
  | 'handoff'
  | 'max_turns'
  | 'max_tokens'
  /** `RunOptions.budget` said no more turns (e.g. a run tree's shared budget is spent). */
  | 'budget'
  | 'hook_stop'
  | 'cancelled'
  | 'hook_error'
  | 'provider_error'
  | 'tool_fatal'
  /** The final answer did not match the output schema, even after one retry. */
  | 'invalid_output'

export interface SteeringItem {
  text: string
  from: string
  at: number
}

/** The tool call being handled. `result` is set once something decided what the model reads. */
export interface CurrentCall {
  callId: string
  toolName: string
  rawArguments: string
  args: unknown
  startedAt: number
  /**
   * How long the tool ran (its work in `executingTool`), kept while an afterToolExecution hook
   * looks at the result; absent for a call whose tool never ran. `tool.end`'s `durationMs`: hooks
   * and a person's wait are not in it.
   */
  ranForMs?: number
  /** Set when the machine can't run the call (unknown tool, bad arguments). */
  invalid: { outcome: ToolOutcome; message: string } | undefined
  approval: ApprovalRequest | undefined
  /** The decision that approved the call (set once approved): the tool is told which approval let it run. */
  approved?: ApprovalDecision
  result: { output: string; isError: boolean; outcome: ToolOutcome } | undefined
}

export interface AgentInput {
  agentId: string
  runId: string
  runPath?: string[]
  agentPath?: string[]
  parentRunId?: string
  input: string | Message[]
  instructions?: string
  maxTurns: number
  maxTokens?: number
  treeLimits?: Readonly<Record<string, number>>
  /** Corrections queued before the run started. */
  steering?: SteeringItem[]
  startedAt: number
}

export interface AgentOutput {
  status: RunStatus
  output: string | undefined
  error: SerializedError | undefined
  stopReason: StopReason | undefined
  turns: number
  usage: Usage
  messages: Message[]
  pendingSteering: SteeringItem[]
  handoff: { to: string; reason?: string } | undefined
}

export type AgentMachineEvent =
  | { type: 'agent.start' }
  | { type: 'agent.cancel'; reason?: string; by?: string }
  | { type: 'agent.steer'; text: string; from?: string }
  | { type: 'approval.decision'; decision: unknown }
  | { type: 'approval.unavailable'; reason: string }
  /** The `deadline` actor: the absolute time it was armed for has come. */
  | { type: 'deadline.reached' }
  /** The work of the wait state the run is in has finished (the run's worker): its output, typed per state by `outputOf`. */
  | { type: 'work.done'; wait: string; output: unknown; elapsedMs: number }
  /** The work of the wait state the run is in has failed. */
  | { type: 'work.error'; wait: string; error: unknown; elapsedMs: number }
