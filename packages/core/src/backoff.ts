/** How retries space out: the first wait, the longest wait, and whether waits are jittered. */
export interface BackoffPolicy {
  baseDelayMs: number
  /** No wait is longer than this. Default: unbounded. */
  maxDelayMs?: number
  /**
   * Spread each wait over [half, all] of its ceiling, so many clients that failed together do
   * not retry in step. Default true.
   */
  jitter?: boolean
}

/**
 * The wait before retry number `attempt` (1 = the wait after the first failure): the base delay
 * doubling per attempt, bounded. One formula for every retry loop in signalbox.
 */
export function backoffDelay(attempt: number, policy: BackoffPolicy, random: () => number = Math.random): number {
  const ceiling = Math.min(policy.maxDelayMs ?? Number.POSITIVE_INFINITY, policy.baseDelayMs * 2 ** Math.max(0, attempt - 1))
  if (policy.jitter === false) return ceiling
  return Math.round(ceiling / 2 + (random() * ceiling) / 2)
}
