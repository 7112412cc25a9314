import type { AnyActorRef } from 'xstate'

/**
 * Keeps a run actor's action executor the one XState made it with. Each microstep, XState's
 * `microstep` writes a recording closure into `actorScope.actionExecutor` (it pushes every action
 * into the microstep's list, then runs it) and puts the original back at the end. V8 allocates a
 * function literal written straight into a property in its old generation, so every microstep's
 * closure keeps that list (each action's context and event) and the actor alive through young
 * GCs until the next full GC; V8 then sees the action records survive and allocates them old from
 * the start, and a step slows by a third (docs/benchmarks.md, "Closures written straight into a
 * property"). An actor reads only the snapshot of a macrostep, never its recorded actions (XState's
 * pure `transition()` records through a scope of its own), so the closure may record nothing: a
 * read of the property gives the original executor, a write is ignored, and each microstep's
 * closure holds an empty list. Not this XState's shape (no own, writable, configurable function
 * `actionExecutor` on a plain-object `_actorScope`): the actor is left as it is.
 */
export function pinActionExecutor(actor: AnyActorRef): boolean {
  const scope = (actor as { _actorScope?: object })._actorScope
  const own = scope && Object.getOwnPropertyDescriptor(scope, 'actionExecutor')
  if (!scope || !own || typeof own.value !== 'function' || !own.writable || !own.configurable) return false
  if (Object.getPrototypeOf(scope) !== Object.prototype) return false
  // The accessor lives on a shared prototype and the executor in a data property: redefining the
  // scope's own property as an accessor would turn the scope into a dictionary (1 KiB a run). The
  // executor is the literal's last property, and deleting the last property keeps an object fast.
  delete (scope as { actionExecutor?: unknown }).actionExecutor
  ;(scope as { [EXECUTOR]?: unknown })[EXECUTOR] = own.value
  Object.setPrototypeOf(scope, PINNED)
  return true
}

const EXECUTOR = Symbol('signalbox.actionExecutor')
const PINNED = Object.create(Object.prototype, {
  actionExecutor: {
    get(this: { [EXECUTOR]: unknown }) {
      return this[EXECUTOR]
    },
    set(_executor: unknown) {},
  },
}) as object
