import type { StateValue } from 'xstate'

/** The deepest active state as a dotted path, e.g. `running.turn.toolCalls.awaitingApproval`. */
export function statePath(value: StateValue): string {
  if (typeof value === 'string') return value
  const parts: string[] = []
  let current: StateValue | undefined = value
  while (current !== undefined) {
    if (typeof current === 'string') {
      parts.push(current)
      break
    }
    const key: string | undefined = Object.keys(current)[0]
    if (key === undefined) break
    parts.push(key)
    current = (current as Record<string, StateValue>)[key]
  }
  return parts.join('.')
}
