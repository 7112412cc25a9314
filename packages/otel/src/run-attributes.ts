import { type Attributes, context, createContextKey } from '@opentelemetry/api'

const RUN_ATTRIBUTES = createContextKey('signalbox run attributes')

/** The calls of `withRunAttributes` in progress on this stack (for processes without a context manager). */
const stack: Attributes[] = []

/**
 * Runs `work` with `attributes` for the runs it starts: a traced agent puts them on the span of
 * every run started inside (`agent.run`, `agent.start`, `agent.stream` called from `work`), with
 * those of an enclosing `withRunAttributes`. E.g. who asked, a session, a tenant. Runs started
 * after an `await` inside `work` get them through the OpenTelemetry context, so that needs a
 * context manager (as trace context does); the ones started before the first `await` always do.
 *
 * @example
 * ```ts
 * const result = await withRunAttributes({ 'user.id': user.id, 'session.id': sessionId }, () => agent.run(input))
 * ```
 */
export function withRunAttributes<T>(attributes: Attributes, work: () => T): T {
  const merged = { ...activeRunAttributes(), ...attributes }
  stack.push(merged)
  try {
    return context.with(context.active().setValue(RUN_ATTRIBUTES, merged), work)
  } finally {
    stack.pop()
  }
}

/** The attributes `withRunAttributes` set for runs started now. */
export function activeRunAttributes(): Attributes | undefined {
  return (context.active().getValue(RUN_ATTRIBUTES) as Attributes | undefined) ?? stack.at(-1)
}
