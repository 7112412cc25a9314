import type { Clock } from '../clock.ts'
import type { EventEmitter } from '../events.ts'
import type { AuditEntry, Reviewer } from '../hitl/types.ts'
import type { HookChain } from '../hooks.ts'
import type { IdGenerator } from '../ids.ts'
import type { Message } from '../messages.ts'
import type { OutputSpec } from '../output.ts'
import type { Provider, ToolSpec } from '../provider/provider.ts'
import type { RunJournal } from '../store/run-journal.ts'
import type { Tool } from '../tool.ts'

export type SteeringPolicy = 'cancel-next' | 'cancel-batch'

export interface RetryPolicy {
  /** Total attempts for one model call, including the first. */
  maxAttempts: number
  baseDelayMs: number
  maxDelayMs: number
}

export const defaultRetryPolicy: RetryPolicy = { maxAttempts: 4, baseDelayMs: 500, maxDelayMs: 8_000 }

/**
 * What the machine's actors close over: the live, non-serializable parts of an agent.
 * The machine's context holds only data.
 */
export interface AgentRuntime {
  agentId: string
  provider: Provider
  tools: ReadonlyMap<string, Tool<unknown>>
  toolSpecs: ToolSpec[]
  hooks: HookChain
  reviewer: Reviewer | undefined
  events: EventEmitter
  recordAudit(entry: AuditEntry): void
  clock: Clock
  ids: IdGenerator
  retry: RetryPolicy
  approvalTimeoutMs: number
  steeringPolicy: SteeringPolicy
  /** Hand-off history filters by run id (functions cannot live in the machine's context). */
  handoffFilters: Map<string, (messages: readonly Message[]) => Message[]>
  /** Budget checks by run id (`RunOptions.budget`), asked before every turn. */
  budgetChecks: Map<string, BudgetCheck>
  /** Set only when the agent has a store: each run's journal (ledger, write queue), by run id. */
  journals: Map<string, RunJournal> | undefined
  /** The schema the final answer must match (`createAgent({ output })`). */
  output?: OutputSpec<unknown> | undefined
}

/** Asked before each turn: an error stops the run (`failed`, stop reason `budget`), undefined lets it go on. */
export type BudgetCheck = () => { code: string; message: string } | undefined
