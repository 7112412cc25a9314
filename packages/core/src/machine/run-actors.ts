import {
  type Actor,
  type AnyActorRef,
  createActor,
  fromTransition,
  type InspectionEvent,
  type Observer,
  type Snapshot,
} from 'xstate'
import type { Clock } from '../clock.ts'
import { type AgentMachine, agentMachine } from './agent-machine.ts'
import type { AgentInput } from './context.ts'
import { pinActionExecutor } from './pinned-executor.ts'

export type Inspect = Observer<InspectionEvent> | ((event: InspectionEvent) => void)

/** A new run's input, or a stored run's snapshot. */
export type RunStart = { input: AgentInput } | { snapshot: Snapshot<unknown> }

/**
 * Makes the XState actors of one agent's runs. Each run is a root actor. Without `inspect`, the
 * runs of an agent share one actor system: XState gives every root actor a system of its own (17
 * closures, two Maps, a WeakMap, a Set and their tables: ~2 KiB a run, measured), which a run of
 * the agent machine does not use (no delayed events, no system ids, no child actors).
 *
 * XState's only way to create an actor in an existing system is to give it a parent. A run's
 * actor is created with the agent's donor (an actor never started, whose only use is its system)
 * as parent, and is made a root again (`_parent` cleared) before anything reads it: it stops,
 * ends and reports errors as a root actor does, and XState never sends the donor anything.
 *
 * With `inspect`, each run keeps a system of its own: an inspector then sees every run as the root
 * of its own system, as XState reports it (the shared system would report the donor as root).
 */
export class RunActors {
  readonly #clock: Clock
  readonly #inspect: Inspect | undefined
  #donor: AnyActorRef | undefined
  /** False if this XState keeps an actor's parent elsewhere than `_parent`: runs get systems of their own. */
  #shares = true

  constructor(clock: Clock, inspect: Inspect | undefined) {
    this.#clock = clock
    this.#inspect = inspect
  }

  create(runId: string, start: RunStart): Actor<AgentMachine> {
    const actor = this.#create(runId, start)
    pinActionExecutor(actor)
    return actor
  }

  #create(runId: string, start: RunStart): Actor<AgentMachine> {
    const options = { id: runId, clock: this.#clock, ...start } as { id: string; clock: Clock; input: AgentInput }
    if (this.#inspect) return createActor(agentMachine, { ...options, inspect: this.#inspect })
    if (!this.#shares) return createActor(agentMachine, options)
    this.#donor ??= createActor(
      fromTransition((state: undefined) => state, undefined),
      { clock: this.#clock },
    )
    const actor = createActor(agentMachine, { ...options, parent: this.#donor })
    if (actor._parent !== this.#donor || actor.system !== this.#donor.system) {
      // Not the XState these internals were read from: never started, this actor is dropped.
      this.#shares = false
      return createActor(agentMachine, options)
    }
    actor._parent = undefined
    return actor
  }
}
