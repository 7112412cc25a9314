import { ErrorCode, SignalboxError } from '../errors.ts'
import type { LedgerEntry, LedgerToolResult } from './checkpoint.ts'

/**
 * The tool-call ledger of a run, keyed by `callId` (the run is the checkpoint's): `started` is
 * recorded before a tool runs, `finished` with its result after. Pure functions over the array
 * stored in the checkpoint; the rule for a resumed call is `resumeToolCall`.
 */
export type { LedgerEntry, LedgerToolResult } from './checkpoint.ts'

/** The outcome a model reads for a call cut off by a crash and not run again. */
export const OUTCOME_UNKNOWN = 'outcome_unknown'

/** The one wording of that result (what the model reads, and what the audit shows). */
export function outcomeUnknownText(toolName: string): string {
  return (
    `The outcome of this call to "${toolName}" is unknown: the process running it stopped (a crash or a restart) ` +
    'after the tool started and before it reported a result. It was not run again, because the tool is not ' +
    'declared idempotent, so it may or may not have taken effect. Check its effect before calling it again.'
  )
}

/** The key a remote tool host de-duplicates on: one per call of one run, the same after a resume. */
export function idempotencyKey(runId: string, callId: string): string {
  return `${runId}:${callId}`
}

export function findCall(ledger: readonly LedgerEntry[], callId: string): LedgerEntry | undefined {
  return ledger.find((entry) => entry.callId === callId)
}

/** Records that a call is about to run (replaces an earlier entry of the same call). */
export function startCall(
  ledger: readonly LedgerEntry[],
  call: { runId: string; callId: string; toolName: string; at: number },
): LedgerEntry[] {
  const entry: LedgerEntry = {
    state: 'started',
    callId: call.callId,
    toolName: call.toolName,
    idempotencyKey: idempotencyKey(call.runId, call.callId),
    startedAt: call.at,
  }
  return [...ledger.filter((other) => other.callId !== call.callId), entry]
}

/** Records a call's result. The call must have been started: finishing an unknown call is a bug. */
export function finishCall(ledger: readonly LedgerEntry[], callId: string, result: LedgerToolResult, at: number): LedgerEntry[] {
  const started = findCall(ledger, callId)
  if (started === undefined)
    throw new SignalboxError(ErrorCode.INTERNAL_ERROR, `Ledger: call "${callId}" finished without having started.`)
  const entry: LedgerEntry = { ...started, state: 'finished', finishedAt: at, result }
  return ledger.map((other) => (other.callId === callId ? entry : other))
}

/** Keeps only the calls still to be resolved (older turns' results live in the transcript). */
export function pruneLedger(ledger: readonly LedgerEntry[], keepCallIds: Iterable<string>): LedgerEntry[] {
  const keep = new Set(keepCallIds)
  return ledger.filter((entry) => keep.has(entry.callId))
}

export type ResumeDecision =
  /** Never started: run it normally. */
  | { action: 'run'; reason: 'not_started' }
  /** Started, not finished, and the tool is idempotent: run it again (with the same idempotency key). */
  | { action: 'run'; reason: 'idempotent_retry'; idempotencyKey: string }
  /** Finished before the crash: the model reads the recorded result; the tool is not called. */
  | { action: 'use_recorded'; result: LedgerToolResult }
  /** Started, not finished, not idempotent: not run again; the model reads `outcomeUnknownText`. */
  | { action: 'report_unknown'; result: LedgerToolResult }

/** What a resumed run does with a call, given its ledger entry and whether the tool is `idempotent`. */
export function resumeToolCall(entry: LedgerEntry | undefined, tool: { name: string; idempotent?: boolean }): ResumeDecision {
  if (entry === undefined) return { action: 'run', reason: 'not_started' }
  if (entry.state === 'finished') return { action: 'use_recorded', result: entry.result }
  if (tool.idempotent === true) return { action: 'run', reason: 'idempotent_retry', idempotencyKey: entry.idempotencyKey }
  return {
    action: 'report_unknown',
    result: { output: outcomeUnknownText(entry.toolName), isError: true, outcome: OUTCOME_UNKNOWN },
  }
}
