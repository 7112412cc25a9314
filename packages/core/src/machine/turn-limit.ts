import type { AgentContext } from './context.ts'
import type { AgentRuntime } from './runtime.ts'

/** Why a run stops before a turn: too many turns, its token budget, or an outside budget (`RunOptions.budget`). */
export type TurnLimit = 'max_turns' | 'max_tokens' | 'budget'

/** A limit that stops the run before a turn; for an outside budget, what it said. */
export interface TurnLimitReached {
  limit: TurnLimit
  /** The outside budget's answer (its code and message), for `budget`. */
  spent?: { code: string; message: string }
}

/** An outside budget's answer per context: the guard that routes on a limit and the action that reports it ask once. */
const budgetAnswers = new WeakMap<AgentContext, { turn: number; reached: TurnLimitReached | undefined }>()

/**
 * The one rule for stopping before turn `turn` (the turn about to start: `context.turn` in the
 * `beforeTurn` state, one more when a turn ends and the next is routed to directly). The outside
 * budget (the user's function) is asked once per context and turn; the run's own limits are two
 * comparisons, cheaper than remembering them.
 */
export function turnLimit(context: AgentContext, runtime: AgentRuntime, turn: number): TurnLimitReached | undefined {
  if (turn > context.run.maxTurns) return { limit: 'max_turns' }
  if (context.run.maxTokens !== undefined && context.usage.totalTokens >= context.run.maxTokens) return { limit: 'max_tokens' }
  const budget = runtime.budgetChecks.get(context.run.runId)
  if (budget === undefined) return undefined
  const known = budgetAnswers.get(context)
  if (known !== undefined && known.turn === turn) return known.reached
  const spent = budget()
  const reached: TurnLimitReached | undefined = spent === undefined ? undefined : { limit: 'budget', spent }
  budgetAnswers.set(context, { turn, reached })
  return reached
}
