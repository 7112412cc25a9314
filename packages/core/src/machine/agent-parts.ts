import type { AnyActorRef } from 'xstate'
import { ConfigError } from '../errors.ts'
import { MachineActions } from './actions.ts'
import type { AgentContext, RunInfo } from './context.ts'
import type { GuardDeps } from './guards.ts'
import { createCallPreparer } from './prepare-call.ts'
import type { AgentRuntime } from './runtime.ts'

/** What one agent's runs need from it: its runtime, and its actions (with the call preparer). */
export interface AgentParts extends GuardDeps {
  act: MachineActions
}

/** Made once per agent definition (a few objects); the machine itself is shared by every agent. */
export function createAgentParts(runtime: AgentRuntime): AgentParts {
  const prepare = createCallPreparer(runtime.tools)
  return { runtime, prepare, act: new MachineActions(runtime, prepare) }
}

/*
 * The runtime is not captured in the machine: each run's actor is bound to its agent's parts when
 * it is created (`bindAgentParts`), by its context's `run` record (the same object for the whole
 * run; guards see only the context) and by its actor system (shared with its worker and the work).
 */
type AnyActorSystem = AnyActorRef['system']
const byRun = new WeakMap<RunInfo, AgentParts>()
const bySystem = new WeakMap<AnyActorSystem, AgentParts>()

/** Binds a created (or restored) run's actor to its agent, before it starts. */
export function bindAgentParts(actor: AnyActorRef, parts: AgentParts): void {
  bySystem.set(actor.system, parts)
  byRun.set((actor.getSnapshot() as { context: AgentContext }).context.run, parts)
}

export const partsOf = (context: AgentContext): AgentParts => byRun.get(context.run) ?? unbound()
export const runtimeOfSystem = (system: AnyActorSystem) => (bySystem.get(system) ?? unbound()).runtime

/** An actor of the shared machine made outside an `Agent` has no runtime to run with. */
export function unbound(): never {
  throw new ConfigError(
    'This agent machine actor is not bound to an agent: start runs with agent.start() / agent.run() (or agent.resume()), not createActor(agent.machine).',
  )
}
