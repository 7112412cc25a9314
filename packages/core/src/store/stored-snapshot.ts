import type { Message } from '../messages.ts'
import { finishedStatus } from '../run-status.ts'
import type { StoredRunStatus } from './checkpoint.ts'

/** What the journal reads from the running actor (the agent machine's snapshot, loosely typed here). */
export interface JournaledActor {
  getSnapshot(): JournaledSnapshot
  getPersistedSnapshot(): unknown
  /** The actor's logic (an XState actor's machine): lets the journal persist a snapshot without its transcript. */
  logic?: { getPersistedSnapshot(snapshot: never): unknown }
}

export interface JournaledSnapshot {
  status: string
  hasTag(tag: string): boolean
  context: {
    messages: Message[]
    steering: { text: string; from: string; at: number }[]
    usage: { promptTokens: number; completionTokens: number; totalTokens: number }
    calls: { id: string }[]
    current: { callId?: string; approval?: unknown; result?: { output: string } } | undefined
    status: string
    /** Set when the run handed the conversation over. */
    handoff?: { to: string; reason?: string } | undefined
  }
}

export interface PersistedSnapshot {
  context: Record<string, unknown>
  [key: string]: unknown
}

/**
 * XState's persisted snapshot with the context's transcript left out (it is stored once, in the
 * run's message log), taken out before XState walks the context for actor references: that walk
 * is O(transcript) per checkpoint (O(n²) over a run) for messages that are stored anyway.
 */
export function persistedWithoutTranscript(actor: JournaledActor, snapshot: JournaledSnapshot): PersistedSnapshot {
  if (actor.logic === undefined) {
    const persisted = actor.getPersistedSnapshot() as PersistedSnapshot
    return { ...persisted, context: { ...persisted.context, messages: [] } }
  }
  const lean = { ...snapshot, context: { ...snapshot.context, messages: [] } }
  return actor.logic.getPersistedSnapshot(lean as never) as PersistedSnapshot
}

/** The stored snapshot with its transcript put back (the inverse of `persistedWithoutTranscript`). */
export function restoreTranscript(snapshot: unknown, messages: Message[]): unknown {
  const persisted = snapshot as PersistedSnapshot
  return { ...persisted, context: { ...persisted.context, messages } }
}

/** A finished run's snapshot without the output of a call it was handling (never restored: only shown). */
export function withoutCallOutput(persisted: PersistedSnapshot): PersistedSnapshot {
  const current = persisted.context.current as { result?: Record<string, unknown> } | undefined
  if (current?.result === undefined) return persisted
  return { ...persisted, context: { ...persisted.context, current: { ...current, result: { ...current.result, output: '' } } } }
}

export function storedStatus(snapshot: JournaledSnapshot, waiting: boolean): StoredRunStatus {
  if (snapshot.status !== 'active') return finishedStatus(snapshot.context.status)
  return waiting ? 'waiting' : 'running'
}

/** Whether the transcript holds the tool message of call `callId` (searched from the end: it is recent). */
export function toolMessageOf(messages: readonly Message[], callId: string): Message | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as Message
    if (message.role === 'tool' && message.tool_call_id === callId) return message
  }
  return undefined
}
