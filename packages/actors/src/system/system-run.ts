import type { RunResult } from '@signalbox/core'
import type { Reattach } from './remote-run.ts'

/** How `AgentSystem.run` runs an agent: where the run sits in its tree, its id, its hand-offs. */
export interface SystemRunOptions {
  signal?: AbortSignal
  parentRunId?: string
  /** Run ids from the root down to the parent (empty or absent: a root run). */
  runPath?: string[]
  /** Agent ids of the `runPath` runs, in the same order. */
  agentPath?: string[]
  /** Hand-offs followed before giving up. Default 5. */
  maxHandoffs?: number
  /**
   * The run's id (default: a new one); the runs it hands off to get ids derived from it. A delegate
   * call derives it from its own run and call, so the same call finds the same child again.
   */
  runId?: string
  /**
   * Look for the run before starting it (a delegate call run again after a crash or a takeover):
   * its stored result, or the host that runs or stores it. `only`: never start it (nowhere:
   * `CHILD_LOST`); `first`: start it when it is nowhere.
   */
  reattach?: Reattach
}

/**
 * The agents a system knows, by id, with their output types (built by `add`): `run` types its
 * result by them. An agent whose id is not a literal type is not listed.
 */
export type KnownAgents = Record<string, unknown>

/** The output type of the agent `Id` in `Known`, `unknown` for an agent the system does not know. */
export type SystemOutput<Known extends KnownAgents, Id extends string> = Id extends keyof Known ? Known[Id] : unknown

export interface SystemRunResult<TOutput = unknown> extends RunResult<TOutput> {
  agentId: string
  /** The agent that gave the final answer (differs from `agentId` after a hand-off). */
  finishedBy: string
  /** Agents the conversation went through, in order. */
  handoffs: string[]
}
