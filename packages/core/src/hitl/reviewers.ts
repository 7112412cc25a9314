import type { Clock } from '../clock.ts'
import { systemClock } from '../clock.ts'
import { AbortedError, ConfigError } from '../errors.ts'
import { decideApproval, type Verdict } from './decision.ts'
import type { ApprovalDecision, ApprovalRequest, Reviewer } from './types.ts'

/**
 * A reviewer that is a function: a policy decides (e.g. amounts under a limit).
 *
 * @param policy Gets the exact `ApprovalRequest` (`toolName`, `arguments`, `digest`, `deadline`...)
 *   and the request's `signal`; returns a `Verdict`: `true`/`false`, or `{ approved, reason }` (the
 *   model reads the reason of a denial). May be async. A throw counts as a failed reviewer: the
 *   call is denied at once (`approval.unavailable`).
 * @param options `name`: the reviewer recorded in the decision and the audit (default `policy`);
 *   `clock`: stamps `decidedAt` (default the system clock).
 * @returns A `Reviewer` whose decisions quote the request (ids and digest), so they fit only that call.
 *
 * @example
 * ```ts
 * const reviewer = policyReviewer(({ arguments: args }) =>
 *   (args as { amount: number }).amount < 100 ? true : { approved: false, reason: 'needs a manager' })
 * ```
 */
export function policyReviewer(
  policy: (request: ApprovalRequest, options: { signal: AbortSignal }) => Verdict | Promise<Verdict>,
  options?: { name?: string; clock?: Clock },
): Reviewer
/** Typed by the agent's tools: `policyReviewer<ApprovalRequestOf<typeof tools>>((request) => ...)`. */
export function policyReviewer<R extends ApprovalRequest>(
  policy: (request: R, options: { signal: AbortSignal }) => Verdict | Promise<Verdict>,
  options?: { name?: string; clock?: Clock },
): Reviewer<R>
export function policyReviewer<R extends ApprovalRequest>(
  policy: (request: R, options: { signal: AbortSignal }) => Verdict | Promise<Verdict>,
  options: { name?: string; clock?: Clock } = {},
): Reviewer<R> {
  const name = options.name ?? 'policy'
  const clock = options.clock ?? systemClock
  return {
    async review(request, { signal }) {
      const verdict = await policy(request, { signal })
      return decideApproval(request, verdict, name, clock.now())
    },
  }
}

export type ScriptedVerdict = Verdict | 'never' | ((request: ApprovalRequest) => Verdict | 'never')

/**
 * A reviewer for tests: answers from a list, in order, and records what it was shown.
 * `'never'` models a person who walked away (waits until aborted). It fails loudly when asked
 * more often than scripted.
 *
 * `new ScriptedReviewer(verdicts, options)`:
 * - `verdicts`: one per request, in order: a `Verdict` (`true`, `false`, `{ approved, reason }`),
 *   `'never'`, or `(request) => Verdict | 'never'` to decide from the request.
 * - `options.name`: the reviewer recorded (default `scripted-reviewer`); `options.clock`: stamps
 *   `decidedAt` and runs `delayMs`; `options.delayMs`: wait this long before answering (default 0).
 *
 * `review()` resolves with a decision bound to the request, rejects with `AbortedError` when the
 * request is withdrawn, and with `ConfigError` when the list is used up. `requests` holds every
 * request shown; `remaining` counts the verdicts left.
 */
export class ScriptedReviewer implements Reviewer {
  readonly requests: ApprovalRequest[] = []
  readonly #verdicts: ScriptedVerdict[]
  readonly #name: string
  readonly #clock: Clock
  readonly #delayMs: number

  constructor(verdicts: ScriptedVerdict[], options: { name?: string; clock?: Clock; delayMs?: number } = {}) {
    this.#verdicts = [...verdicts]
    this.#name = options.name ?? 'scripted-reviewer'
    this.#clock = options.clock ?? systemClock
    this.#delayMs = options.delayMs ?? 0
  }

  async review(request: ApprovalRequest, { signal }: { signal: AbortSignal }): Promise<ApprovalDecision> {
    this.requests.push(request)
    const next = this.#verdicts.shift()
    if (next === undefined) {
      throw new ConfigError(`ScriptedReviewer: unexpected approval request #${this.requests.length} for "${request.toolName}".`)
    }
    const verdict = typeof next === 'function' ? next(request) : next
    if (verdict === 'never' || this.#delayMs > 0) {
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => {
          if (timer !== undefined) this.#clock.clearTimeout(timer)
          reject(new AbortedError('The approval request was withdrawn.'))
        }
        const timer =
          verdict === 'never'
            ? undefined
            : this.#clock.setTimeout(() => {
                signal.removeEventListener('abort', onAbort)
                resolve()
              }, this.#delayMs)
        if (signal.aborted) onAbort()
        else signal.addEventListener('abort', onAbort, { once: true })
      })
    }
    return decideApproval(request, verdict as Verdict, this.#name, this.#clock.now())
  }

  /** Verdicts not consumed yet. */
  get remaining(): number {
    return this.#verdicts.length
  }
}
