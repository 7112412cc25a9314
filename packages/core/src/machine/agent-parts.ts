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
 * run; guards and actions see only the context). The binding is a hidden property of that record,
 * not the value of a module-wide WeakMap: V8's young-generation collections keep an entry of an
 * old WeakMap whose value leads back to its key (the binding reaches the actor, hence the context,
 * hence the record), so every finished run's binding outlived them until the next full GC: 21 KiB
 * a 20-step hooked run then, 9 now (`bench/young-retention.ts`; docs/benchmarks.md, "A timed
 * in-process figure alternates between two phases").
 */
const BINDING = Symbol('signalbox.runBinding')
type BoundRun = RunInfo & { readonly [BINDING]?: RunBinding }

/**
 * Binds a created (or restored) run's actor to its agent, before it starts, and gives it its worker
 * (the work's answers are sent to the actor). The caller stops the worker when the run ends.
 */
export function bindAgentParts(actor: AnyActorRef, parts: AgentParts): RunWorker {
  const worker = new RunWorker((event: AgentMachineEvent) => actor.send(event), parts.runtime)
  const run = (actor.getSnapshot() as { context: AgentContext }).context.run
  // Not enumerable: a spread of the record, JSON and structuredClone leave it out.
  Object.defineProperty(run, BINDING, { value: { parts, worker } satisfies RunBinding, configurable: true })
  return worker
}

export const partsOf = (context: AgentContext): AgentParts => ((context.run as BoundRun)[BINDING] ?? unbound()).parts
export const workerOf = (context: AgentContext): RunWorker => ((context.run as BoundRun)[BINDING] ?? unbound()).worker

/** An actor of the shared machine made outside an `Agent` has no runtime to run with. */
export function unbound(): never {
  throw new ConfigError(
    'This agent machine actor is not bound to an agent: start runs with agent.start() / agent.run() (or agent.resume()), not createActor(agent.machine).',
  )
}
