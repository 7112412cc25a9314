import { AbortedError, RunCancelledError } from '@signalbox/core'

/**
 * Why a request stopped waiting for its decider (the signal `review`/`answer` receive aborts with
 * a `RequestWithdrawnError` naming it): `expired`, its deadline passed; `settled-elsewhere`, another
 * reviewer or answerer settled it (or it was withdrawn as orphaned); `withdrawn`, the agent that
 * asked withdrew it (a correction cancelled the call, its run stopped); `stopping`, this service is
 * closing and leaves it to another instance.
 */
export type WithdrawalReason = 'expired' | 'settled-elsewhere' | 'withdrawn' | 'stopping'

const MESSAGES: Record<WithdrawalReason, string> = {
  expired: 'The request expired.',
  'settled-elsewhere': 'The request was settled elsewhere.',
  withdrawn: 'The agent withdrew the request.',
  stopping: 'The service is stopping.',
}

/** The reason a decider's signal aborts with when its request is withdrawn. Branch on `withdrawal`, not the message. */
export class RequestWithdrawnError extends AbortedError {
  readonly withdrawal: WithdrawalReason
  constructor(withdrawal: WithdrawalReason) {
    super(MESSAGES[withdrawal])
    this.withdrawal = withdrawal
  }
}

/** The withdrawal a signal's reason names, if it is one. */
export function withdrawalOf(reason: unknown): WithdrawalReason | undefined {
  return RequestWithdrawnError.is(reason) ? reason.withdrawal : undefined
}

/**
 * What reviewers and answerers are told when the agent stops waiting (its signal aborted, no
 * correction named): a cancel says so, with who cancelled (`cancel`: a stored run's request is
 * withdrawn only then); anything else is the run's end, or its process stopping.
 */
export function withdrawalOnStop(reason: unknown): { reason: string; by?: string; cancel?: RunCancelledError } {
  if (!RunCancelledError.is(reason)) return { reason: 'the agent stopped waiting for it (its run was cancelled or ended)' }
  const why = typeof reason.details?.reason === 'string' ? reason.details.reason : reason.message
  return { reason: `the run was cancelled (${why})`, ...(reason.by !== undefined ? { by: reason.by } : {}), cancel: reason }
}
