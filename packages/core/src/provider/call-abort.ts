import type { ProviderCallOptions } from './provider.ts'

/**
 * How a model call learns it was aborted without an `AbortSignal`. On Node 20 making a signal
 * costs ~3.5 µs and hidden classes of its own (each signal's), and a run parked on its call holds
 * it; the `openai` SDK already makes an abort controller for every request. So the agent
 * gives its call a `signal` made only when read, and this beside it (under `CALL_ABORT`), which
 * signalbox's own providers tie to what they would have handed the signal to. Not public: a
 * provider of one's own reads `signal`, as before.
 */
export interface CallAbort {
  /** Whether the call was aborted (its signal, when made, is aborted too). */
  readonly aborted: boolean
  /** Calls `listener` once when the call is aborted (at once if it already is); returns what unsubscribes it. */
  onAbort(listener: () => void): () => void
}

export const CALL_ABORT: unique symbol = Symbol('signalbox.callAbort')

/** The call's `CallAbort`, when the agent gave one. */
export function callAbortOf(options: ProviderCallOptions): CallAbort | undefined {
  return (options as { [CALL_ABORT]?: CallAbort })[CALL_ABORT]
}

/** Whether the call was aborted, reading its signal only when no `CallAbort` says. */
export function callAborted(options: ProviderCallOptions): boolean {
  const abort = callAbortOf(options)
  return abort !== undefined ? abort.aborted : options.signal.aborted
}
