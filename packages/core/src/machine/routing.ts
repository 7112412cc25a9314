import type { ApprovalRule } from '../tool.ts'

/** Where a tool call goes next. */
export type CallRoute =
  /** A tool of this reply handed the conversation over: the call does not run. */
  | 'handed-over'
  /** A correction from the person is pending: it cancels the call. */
  | 'steered'
  /** Unknown tool or bad arguments: the model reads why. */
  | 'invalid'
  /** The beforeToolExecution hooks decide first. */
  | 'hook'
  /** A person must approve the exact call. */
  | 'approval'
  /** The tool's `needsApproval` predicate looks at the arguments. */
  | 'approval-rule'
  /** Nothing stands in the way: the tool runs. */
  | 'run'

/** What routing looks at, for one call. */
export interface CallFacts {
  handedOver: boolean
  steered: boolean
  invalid: boolean
  /** A beforeToolExecution hook is registered and has not yet seen this call. */
  hook: boolean
  needsApproval: ApprovalRule<unknown> | undefined
}

/**
 * The one routing rule for a tool call. The machine's fast path (a call that goes straight to
 * its hook or runs at once) and its step-by-step path both ask it, so they cannot disagree.
 * The order is the order of the checks: a hand-off or a correction beats everything, an invalid
 * call never reaches a hook, hooks decide before a person is asked.
 */
export function routeCall(facts: CallFacts): CallRoute {
  if (facts.handedOver) return 'handed-over'
  if (facts.steered) return 'steered'
  if (facts.invalid) return 'invalid'
  if (facts.hook) return 'hook'
  if (facts.needsApproval === true) return 'approval'
  if (typeof facts.needsApproval === 'function') return 'approval-rule'
  return 'run'
}
