/**
 * A run's machine state from an inspection message on the bus (`<prefix>.inspect.*`): the state
 * value of an `@xstate.snapshot` (or `@xstate.actor`) event whose session is a run. Read with a
 * schema of the few fields the console uses (not the inspector's module, which brings the whole
 * Stately bridge with it); anything else is dropped.
 */
import { z } from 'zod/v4'

const MAX_STATE_JSON = 4_000
const RUN_SESSION = 'run:'

const InspectedState = z.looseObject({
  type: z.enum(['@xstate.snapshot', '@xstate.actor']),
  sessionId: z.string().startsWith(RUN_SESSION).max(512),
  snapshot: z.looseObject({ value: z.unknown() }),
})

export function runStateOf(data: Uint8Array): { runId: string; value: unknown } | undefined {
  let wire: unknown
  try {
    wire = JSON.parse(Buffer.from(data).toString('utf8'))
  } catch {
    return undefined
  }
  const parsed = InspectedState.safeParse(wire)
  if (!parsed.success) return undefined
  const { value } = parsed.data.snapshot
  if (value === undefined || !fitsState(value)) return undefined
  return { runId: parsed.data.sessionId.slice(RUN_SESSION.length), value }
}

/** Whether a state value is small enough to show; a value nested too deep to serialize is not. */
function fitsState(value: unknown): boolean {
  try {
    return JSON.stringify(value).length <= MAX_STATE_JSON
  } catch {
    // Anyone on the bus can publish here: a value nested 100,000 deep overflows the stack.
    return false
  }
}
