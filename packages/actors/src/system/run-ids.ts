import { createHash } from 'node:crypto'

/**
 * The id of the run that one call of a parent run starts (`attempt`: the delegate tool's retries,
 * `handoff`: the runs a hand-off chain goes through): the same for the same call, in any process,
 * so a call run again after a crash finds its child instead of starting a second one. Shaped like
 * the random ones (`run_` and a UUID: a name-based one, version 8 bits set, from a SHA-256).
 */
export function derivedRunId(parentRunId: string, callId: string, attempt = 1): string {
  const hex = createHash('sha256').update(`${parentRunId}\u0000${callId}\u0000${attempt}`).digest('hex').slice(0, 32)
  const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16)
  return `run_${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** The id of the run a hand-off starts: derived from the run that handed over. */
export function handoffRunId(runId: string): string {
  return derivedRunId(runId, 'handoff', 1)
}
