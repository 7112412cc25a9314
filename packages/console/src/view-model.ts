/**
 * What the console server tells its pages (over SSE) and what a page may ask of it. Types only:
 * the page bundle imports them too.
 */
import type { RequestOrigin } from '@signalbox/actors'
import type { ApprovalContext, AuditEntry, RunStatus as FinishedStatus } from '@signalbox/core'
import type { ChartLayout } from './chart-graph.ts'

export interface InboxApproval {
  kind: 'approval'
  id: string
  agentId: string
  runId: string
  runPath: string[]
  agentPath: string[]
  callId: string
  toolName: string
  /** The exact arguments the tool receives if approved (a reviewer must see what they approve). */
  arguments: unknown
  digest: string
  requestedAt: number
  deadline: number
  /** Who sent it, as its signature tells (checked only when the console has agent keys). */
  origin: RequestOrigin
  /** The tool's JSON Schema, when the agent sent it: the page checks an edit against it before sending. */
  parameters?: Record<string, unknown>
  /** What the tool does, when the agent sent it. */
  description?: string
  /** What led to the call (the run's input, the model's last text), when the agent sent it. */
  context?: ApprovalContext
}

/** One message of a run's conversation, as the page shows it (only with contents allowed). */
export interface MessageView {
  role: 'system' | 'user' | 'assistant' | 'tool'
  text: string
}

export interface InboxQuestion {
  kind: 'question'
  id: string
  agentId: string
  runId: string
  runPath: string[]
  agentPath: string[]
  callId: string
  question: string
  requestedAt: number
  deadline: number
}

export type InboxItem = InboxApproval | InboxQuestion

export type SettledOutcome = 'approved' | 'denied' | 'answered' | 'timed out' | 'withdrawn'

/** An item that left the inbox, and who or what settled it. */
export interface SettledItem {
  id: string
  kind: InboxItem['kind']
  agentId: string
  runId: string
  /** The tool name, or the question. */
  title: string
  outcome: SettledOutcome
  /** The reviewer or answerer; absent for a timeout. */
  by?: string
  reason?: string
  at: number
}

export type RunStatus = 'running' | FinishedStatus

/** One line of a run's recent events; `detail` carries contents only when they are allowed. */
export interface EventView {
  type: string
  at: number
  /** The call's tool, for events about one. */
  toolName?: string
  summary: string
  detail?: string
}

export interface RunView {
  runId: string
  agentId: string
  parentRunId?: string
  runPath: string[]
  agentPath: string[]
  status: RunStatus
  /** The machine's state value from inspection (`{ running: { turn: 'callingModel' } }`), when published. */
  state?: unknown
  startedAt: number
  updatedAt: number
  events: EventView[]
}

export type ServerMessage =
  | {
      type: 'hello'
      reviewer: string
      /** Every audit kind, for the audit view's filter. */
      auditKinds: string[]
      includeContents: boolean
      now: number
      chart: ChartLayout
      inbox: InboxItem[]
      settled: SettledItem[]
      runs: RunView[]
      audit: AuditEntry[]
      /** Each recent run's conversation, with contents allowed. */
      transcripts: Record<string, MessageView[]>
    }
  | { type: 'inbox.add'; item: InboxItem }
  | { type: 'inbox.settled'; settled: SettledItem }
  | { type: 'run'; run: RunView }
  | { type: 'audit'; entry: AuditEntry }
  | { type: 'transcript'; runId: string; messages: MessageView[] }
