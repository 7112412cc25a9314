/**
 * An agent as the takeover resumes its runs: a child run goes on for its parent (heartbeats
 * answered, result published, wherever the parent is); a root run's hand-off is followed here,
 * as the process that started it would have.
 */
import type { Agent, Message, RunHandle } from '@signalbox/core'
import type { RunStore } from '@signalbox/core/store'
import type { RunHost } from './run-host.ts'
import { handoffRunId } from './run-ids.ts'
import type { ResumableAgent } from './run-takeover.ts'
import type { SystemRunOptions } from './system-run.ts'

export interface ResumeWiring {
  store: RunStore
  /** This system's host of runs for remote parents (absent without a bus). */
  host: RunHost | undefined
  /** The system is closing: follow no more hand-offs. */
  stopping: AbortSignal
  /** Runs the next agent of a hand-off (`AgentSystem.run`; `follows`: the run that handed over). */
  follow(agentId: string, input: Message[], options: SystemRunOptions, follows: string): Promise<unknown>
}

export function resumableAgent(agent: Agent<any>, wiring: ResumeWiring): ResumableAgent {
  return {
    id: agent.id,
    runs: agent.runs,
    resume: (runId, { signal }) => resumeTaken(agent, runId, signal, wiring),
    followHandoff: (runId, { signal }) => followStored(runId, signal, wiring),
  }
}

async function resumeTaken(agent: Agent<any>, runId: string, signal: AbortSignal, wiring: ResumeWiring): Promise<void> {
  const cancelled = new AbortController()
  const handle = (await agent.resume(runId, { signal: AbortSignal.any([signal, cancelled.signal]) })) as RunHandle<unknown>
  const { run } = handle.actor.getSnapshot().context
  if (run.runPath.length > 0 && wiring.host) {
    wiring.host.adopt(agent, handle, cancelled)
    return
  }
  handle.result
    .then(async (result) => {
      if (!result.handoff || wiring.stopping.aborted) return
      await wiring.follow(
        result.handoff.to,
        result.handoff.messages,
        {
          runId: handoffRunId(runId),
          reattach: 'first',
          ...(run.runPath.length > 0 ? { runPath: run.runPath, agentPath: run.agentPath } : {}),
          ...(run.parentRunId ? { parentRunId: run.parentRunId } : {}),
        },
        runId,
      )
    })
    // The runs report their own ends (events, store); nobody waits on this one.
    .catch(() => {})
}

/** A stored root run's pending hand-off, followed here (taken over: its process died before it started the next agent). */
async function followStored(runId: string, signal: AbortSignal, { store, follow }: ResumeWiring): Promise<void> {
  const stored = await store.load(runId, { signal })
  const handoff = stored?.checkpoint.handoff
  if (stored === undefined || handoff?.pending !== true) return
  const transcript = await store.readMessages(runId, { length: stored.checkpoint.transcript.length, signal })
  // What the run handed over: its transcript without the system prompt (an agent's own filter
  // lives in the process that ran it).
  const messages = transcript.filter((message) => message.role !== 'system')
  await follow(handoff.to, messages, { runId: handoffRunId(runId), reattach: 'first' }, runId).catch(() => {})
}
