import type { AnyActorRef } from 'xstate'
import { ConfigError } from '../errors.ts'
import { MachineActions } from './actions.ts'
import type { AgentContext, AgentMachineEvent, RunInfo } from './context.ts'
import type { GuardDeps } from './guards.ts'
import { createCallPreparer } from './prepare-call.ts'
import type { AgentRuntime } from './runtime.ts'
import { RunWorker } from './worker.ts'

/** What one agent's runs need from it: its runtime, and its actions (with the call preparer). */
export interface AgentParts extends GuardDeps {
  act: MachineActions
}

/** Made once per agent definition (a few objects); the machine itself is shared by every agent. */
export function createAgentParts(runtime: AgentRuntime): AgentParts {
  const prepare = createCallPreparer(runtime.tools)
  return { runtime, prepare, act: new MachineActions(runtime, prepare) }
}

/** A run's own parts beside its actor: its agent's parts and the worker that does its waits' work. */
interface RunBinding {
  parts: AgentParts
  worker: RunWorker
}

/*
 * The runtime is not captured in the machine: each run's actor is bound to its agent's parts when
 * it is created (`bindAgentParts`), by its context's `run` record (the same object for the whole
 * run; guards and actions see only the context).
 */
const byRun = new WeakMap<RunInfo, RunBinding>()

/**
 * Binds a created (or restored) run's actor to its agent, before it starts, and gives it its worker
 * (the work's answers are sent to the actor). The caller stops the worker when the run ends.
 */
export function bindAgentParts(actor: AnyActorRef, parts: AgentParts): RunWorker {
  const worker = new RunWorker((event: AgentMachineEvent) => actor.send(event), parts.runtime)
  byRun.set((actor.getSnapshot() as { context: AgentContext }).context.run, { parts, worker })
  return worker
}

export const partsOf = (context: AgentContext): AgentParts => (byRun.get(context.run) ?? unbound()).parts
export const workerOf = (context: AgentContext): RunWorker => (byRun.get(context.run) ?? unbound()).worker

/** An actor of the shared machine made outside an `Agent` has no runtime to run with. */
export function unbound(): never {
  throw new ConfigError(
    'This agent machine actor is not bound to an agent: start runs with agent.start() / agent.run() (or agent.resume()), not createActor(agent.machine).',
  )
}
