/**
 * Agent ids and tool names: what the chat-completions API accepts as a tool name, and a single
 * subject token (an id never injects a `.`, `*` or `>` into a subject).
 */
export const NAME_PATTERN = /^[A-Za-z0-9_-]{1,64}$/

/** The rule a name follows, for messages: "use 1-64 letters, digits, ...". */
export const NAME_RULE = '1-64 letters, digits, "_" or "-"'

/** Whether `value` can be an agent id or a tool name. */
export function isName(value: unknown): value is string {
  return typeof value === 'string' && NAME_PATTERN.test(value)
}
