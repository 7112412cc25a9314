/**
 * The console's view of the bus: pending approvals and questions (through the project's reviewer
 * and answer services, in broadcast mode so every console sees every request), runs and their
 * recent events, each run's machine state from inspection, and the audit trail. Decisions made
 * here go out exactly as any reviewer's do, under the console's reviewer name and, with a signer,
 * signed with its key.
 */
import { randomUUID } from 'node:crypto'
import {
  type RequestOrigin,
  type RequestService,
  readAudit,
  sendControl,
  sendSteering,
  serveAnswerer,
  serveReviewer,
  watchEvents,
  withdrawalOf,
} from '@signalbox/actors'
import { agentKeysPolicy, type Signer, type TrustPolicy } from '@signalbox/actors/trust'
import {
  AbortedError,
  type Answer,
  type ApprovalDecision,
  type ApprovalRequest,
  type AuditEntry,
  type Clock,
  SignalboxError,
  systemClock,
} from '@signalbox/core'
import { type Bus, createSubjects, type Subjects } from '@signalbox/core/bus'
import { finishedStatus } from '@signalbox/core/internal'
import { eventView, ObservedEvent } from './event-view.ts'
import { runStateOf } from './run-state.ts'
import { createRunTranscripts } from './run-transcripts.ts'
import type { InboxItem, MessageView, RunView, ServerMessage, SettledItem, SettledOutcome } from './view-model.ts'

export interface ConsoleHubOptions {
  bus: Bus
  subjects?: Subjects
  /** Who decides here: goes into every decision, answer, correction and cancel. */
  reviewer: string
  /** Only this agent's requests and runs. Default: every agent on the bus. */
  agentId?: string
  /** Show message contents, tool arguments and outputs in the run view. Default false. */
  includeContents?: boolean
  /**
   * The agents' public keys: approval requests not signed by one of them are never shown, the
   * others are marked verified. Without keys, requests are shown marked unverified.
   */
  agentKeys?: readonly string[]
  /**
   * A trust policy (the agents' own, or one with an `agents` section): its `agents` check requests
   * (as `agentKeys`, which are added to it), and only decisions and answers signed by its
   * `reviewers` and `answerers` settle an item elsewhere, so a forged one cannot drop it from the
   * inbox (without those sections, nothing made elsewhere does). Without `agents` or `agentKeys`,
   * requests are not checked.
   */
  trust?: TrustPolicy
  /** The console's key: its decisions, answers, steering and cancels are signed with it. */
  signer?: Signer
  clock?: Clock
  /** An approval request refused without being shown (not signed by an agent key, digest mismatch). */
  onRefused?(requestId: string, reason: string, request: ApprovalRequest): void
  onError?(error: unknown): void
}

export interface ConsoleHub {
  readonly ready: Promise<void>
  readonly reviewer: string
  readonly includeContents: boolean
  snapshot(): {
    inbox: InboxItem[]
    settled: SettledItem[]
    runs: RunView[]
    audit: AuditEntry[]
    transcripts: Record<string, MessageView[]>
  }
  /** Calls `listener` with every change; returns an unsubscribe. */
  subscribe(listener: (message: ServerMessage) => void): () => void
  /** `arguments`: approve with edited arguments (the agent validates them against the tool's schema). */
  decide(id: string, verdict: { approved: boolean; reason?: string; arguments?: unknown }): DecideResult
  answer(id: string, text: string): DecideResult
  steer(runId: string, text: string, signal?: AbortSignal): Promise<void>
  cancel(runId: string, reason: string | undefined, signal?: AbortSignal): Promise<string[]>
  close(): void
}

export type DecideResult = { ok: true } | { ok: false; code: 'NOT_PENDING'; settled?: SettledItem }

interface Pending {
  item: InboxItem
  /** A decision from this console is on its way: a second click must not send another. */
  deciding?: boolean
  /**
   * Hands the reply to the request's wait. `false`: nobody waits for it any more (the request is no
   * longer asked here, e.g. it was withdrawn while its settlement is still on its way), so nothing is sent.
   */
  settle(reply: ApprovalDecision | Answer): boolean
}

const MAX_SETTLED = 100
const MAX_RUNS = 500
const MAX_EVENTS_PER_RUN = 30
const MAX_AUDIT = 2_000
export function createConsoleHub(options: ConsoleHubOptions): ConsoleHub {
  const { bus, reviewer } = options
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const includeContents = options.includeContents === true
  const onError = options.onError ?? (() => {})
  const stop = new AbortController()
  const pending = new Map<string, Pending>()
  const settled: SettledItem[] = []
  const runs = new Map<string, RunView>()
  /** Inspection may arrive before the run's first event. */
  const stateByRun = new Map<string, unknown>()
  const audit: AuditEntry[] = []
  /** With contents allowed: each recent run's conversation, shown with its approvals. */
  const transcripts = createRunTranscripts()
  const listeners = new Set<(message: ServerMessage) => void>()

  const emit = (message: ServerMessage) => {
    for (const listener of listeners) {
      try {
        listener(message)
      } catch (error) {
        onError(error)
      }
    }
  }

  /**
   * Items settled as "the run ended" before their own settlement arrived. A run's events travel
   * faster than a stored decision's echo (under load the agent can read the decision, finish and
   * report `run.end` before a console hears the decision stored): the decision or answer that
   * arrives next replaces the line, so it says who decided.
   */
  const endedWithRun = new Set<string>()

  const settle = (id: string, outcome: SettledOutcome, by: string | undefined, reason?: string) => {
    const entry = pending.get(id)
    if (!entry) {
      if (endedWithRun.delete(id) && (outcome === 'approved' || outcome === 'denied' || outcome === 'answered')) {
        correct(id, { outcome, by, reason })
      }
      return
    }
    pending.delete(id)
    const { item } = entry
    const done: SettledItem = {
      id,
      kind: item.kind,
      agentId: item.agentId,
      runId: item.runId,
      title: item.kind === 'approval' ? item.toolName : item.question,
      outcome,
      ...(by === undefined ? {} : { by }),
      ...(reason === undefined ? {} : { reason }),
      at: clock.now(),
    }
    settled.unshift(done)
    if (settled.length > MAX_SETTLED) settled.pop()
    emit({ type: 'inbox.settled', settled: done })
  }

  /** Replaces the settled line of `id` with what `change` says, as of now. */
  const correct = (id: string, change: { outcome: SettledOutcome; by: string | undefined; reason: string | undefined }) => {
    const index = settled.findIndex((s) => s.id === id)
    const done = settled[index]
    if (done === undefined) return
    const corrected: SettledItem = { ...done, outcome: change.outcome, at: clock.now() }
    if (change.by === undefined) delete corrected.by
    else corrected.by = change.by
    if (change.reason === undefined) delete corrected.reason
    else corrected.reason = change.reason
    settled[index] = corrected
    emit({ type: 'inbox.settled', settled: corrected })
  }

  /**
   * The agent withdrew a request (a correction cancelled the call): it leaves the inbox at once,
   * saying by whom. Decided here while the withdrawal was on its way, the agent refused that
   * decision (already settled): the item says withdrawn, the agent's word.
   */
  const withdrawn = (id: string, reason: string, by: string | undefined) => {
    if (pending.has(id)) return settle(id, 'withdrawn', by, reason)
    const done = settled.find((s) => s.id === id)
    if (done === undefined) return
    // The agent's word is final: it replaces a line its run's end left (no decision may replace it
    // after that), as it replaces a decision it refused.
    if (endedWithRun.delete(id) || done.outcome === 'approved' || done.outcome === 'denied') {
      correct(id, { outcome: 'withdrawn', by, reason })
    }
  }

  const settleDecision = (id: string, decision: ApprovalDecision) => {
    const edited = decision.approved && decision.arguments !== undefined
    settle(id, decision.approved ? 'approved' : 'denied', decision.reviewer, edited ? 'with edited arguments' : decision.reason)
  }

  /** Holds a request in the inbox until a person here decides, someone else does, or it expires. */
  const waitForPerson = <T extends ApprovalDecision | Answer>(item: InboxItem, signal: AbortSignal): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let waiting = true
      const onAbort = () => {
        waiting = false
        const withdrawal = withdrawalOf(signal.reason)
        // Settled elsewhere or withdrawn by the agent: the watchers report who. A stop leaves the item for others.
        if (withdrawal === 'expired' || clock.now() >= item.deadline) settle(item.id, 'timed out', undefined)
        else if (withdrawal !== 'settled-elsewhere' && withdrawal !== 'withdrawn') pending.delete(item.id)
        reject(signal.reason ?? new AbortedError('withdrawn'))
      }
      const settleHere = (reply: ApprovalDecision | Answer): boolean => {
        if (!waiting) return false
        waiting = false
        signal.removeEventListener('abort', onAbort)
        resolve(reply as T)
        return true
      }
      if (signal.aborted) return onAbort()
      signal.addEventListener('abort', onAbort, { once: true })
      pending.set(item.id, { item, settle: settleHere })
      emit({ type: 'inbox.add', item })
    })

  const services: RequestService[] = []
  const scope = options.agentId ? { agentId: options.agentId } : {}
  const group = `console-${randomUUID()}`
  const trust = options.agentKeys?.length ? agentKeysPolicy(options.agentKeys, options.agentId, options.trust) : options.trust
  const signer = options.signer ? { signer: options.signer } : {}
  // Every console sees every request, signs with its own key, and counts only the policy's
  // reviewers and answerers as settling elsewhere (a forged reply must not drop a request).
  const asPerson = {
    bus,
    subjects,
    ...scope,
    mode: 'broadcast' as const,
    group,
    clock,
    ...(trust ? { trust } : {}),
    ...signer,
  }
  const origins = new Map<string, RequestOrigin>()
  services.push(
    serveReviewer({
      ...asPerson,
      onRequest: (request, origin) => origins.set(request.requestId, origin),
      ...(options.onRefused ? { onRefused: (request, reason) => options.onRefused?.(request.requestId, reason, request) } : {}),
      reviewer: {
        review: (request, { signal }) => {
          const origin = origins.get(request.requestId) ?? { verified: false, reason: 'unchecked' }
          origins.delete(request.requestId)
          return waitForPerson<ApprovalDecision>(
            {
              kind: 'approval',
              id: request.requestId,
              agentId: request.agentId,
              runId: request.runId,
              runPath: request.runPath,
              agentPath: request.agentPath ?? [],
              callId: request.callId,
              toolName: request.toolName,
              arguments: request.arguments,
              digest: request.digest,
              requestedAt: request.requestedAt,
              deadline: request.deadline,
              origin,
              ...(request.parameters ? { parameters: request.parameters } : {}),
              ...(request.description ? { description: request.description } : {}),
              ...(request.context ? { context: request.context } : {}),
            },
            signal,
          )
        },
      },
      onDecision: (request, decision) => settleDecision(request.requestId, decision),
      onSettled: settleDecision,
      onWithdrawn: (id, { reason, by }) => withdrawn(id, reason, by),
      onError,
    }),
    serveAnswerer({
      ...asPerson,
      answerer: {
        answer: (question, { signal }) =>
          waitForPerson<Answer>(
            {
              kind: 'question',
              id: question.questionId,
              agentId: question.agentId,
              runId: question.runId,
              runPath: question.runPath,
              agentPath: question.agentPath ?? [],
              callId: question.callId,
              question: question.question,
              requestedAt: question.askedAt,
              deadline: question.deadline,
            },
            signal,
          ),
      },
      onAnswer: (question, answer) => settle(question.questionId, 'answered', answer.answeredBy),
      onSettled: (id, answer) => settle(id, 'answered', answer.answeredBy),
      onWithdrawn: (id, { reason, by }) => withdrawn(id, reason, by),
      onError,
    }),
  )

  const runOf = (event: ObservedEvent): RunView => {
    let run = runs.get(event.runId)
    if (!run) {
      run = {
        runId: event.runId,
        agentId: event.agentId,
        ...(event.parentRunId ? { parentRunId: event.parentRunId } : {}),
        runPath: event.runPath ?? [],
        agentPath: event.agentPath ?? [],
        status: 'running',
        ...(stateByRun.has(event.runId) ? { state: stateByRun.get(event.runId) } : {}),
        startedAt: event.at,
        updatedAt: event.at,
        events: [],
      }
      runs.set(event.runId, run)
      if (runs.size > MAX_RUNS) runs.delete(runs.keys().next().value as string)
    }
    return run
  }

  const events = watchEvents({
    bus,
    subjects,
    ...scope,
    signal: stop.signal,
    onEvent: (raw) => {
      // The envelope was checked; the fields read here are checked again (a forged event is dropped).
      const parsed = ObservedEvent.safeParse(raw)
      if (!parsed.success) return
      const event = parsed.data
      const run = runOf(event)
      run.updatedAt = event.at
      if (event.type === 'run.end') {
        run.status = finishedStatus(event.status)
        // The run no longer waits: its open requests leave the inbox (a late decision would be
        // refused). Its run may have ended on a decision this console has not heard yet: that
        // decision, when it comes, replaces the line (`endedWithRun`).
        for (const [id, entry] of pending) {
          if (entry.item.runId !== event.runId) continue
          settle(id, 'withdrawn', undefined, `the run ended (${run.status})`)
          endedWithRun.add(id)
          if (endedWithRun.size > MAX_SETTLED) endedWithRun.delete(endedWithRun.values().next().value as string)
        }
      }
      // Streamed text is one event per token: the model.response that follows carries it whole.
      if (event.type !== 'text.delta') run.events.push(eventView(event, includeContents))
      if (run.events.length > MAX_EVENTS_PER_RUN) run.events.shift()
      emit({ type: 'run', run })
      const transcript = includeContents ? transcripts.update(event.runId, raw) : undefined
      if (transcript) emit({ type: 'transcript', runId: event.runId, messages: transcript })
    },
  })

  const inspection = bus.subscribe(
    subjects.inspect(),
    (message) => {
      const state = runStateOf(message.data)
      if (!state) return
      const { runId, value } = state
      stateByRun.set(runId, value)
      if (stateByRun.size > MAX_RUNS) stateByRun.delete(stateByRun.keys().next().value as string)
      const run = runs.get(runId)
      if (run) {
        run.state = value
        emit({ type: 'run', run })
      }
    },
    { signal: stop.signal },
  )

  const auditDone = readAudit({
    bus,
    subjects,
    ...(options.agentId ? { filter: { agentId: options.agentId } } : {}),
    follow: true,
    signal: stop.signal,
    onEntry: (entry) => {
      audit.push(entry)
      if (audit.length > MAX_AUDIT) audit.shift()
      emit({ type: 'audit', entry })
    },
  })
  auditDone.catch(onError)

  const knownRun = (runId: string): RunView => {
    const run = runs.get(runId)
    if (!run) throw new ConsoleRequestError('UNKNOWN_RUN', `no run ${runId} seen on the bus`)
    return run
  }

  return {
    ready: Promise.all([...services.map((s) => s.ready), events.ready, inspection.ready]).then(() => {}),
    reviewer,
    includeContents,
    snapshot: () => ({
      inbox: [...pending.values()].map((p) => p.item).sort((a, b) => b.requestedAt - a.requestedAt),
      settled: [...settled],
      runs: [...runs.values()],
      audit: [...audit],
      transcripts: transcripts.snapshot(),
    }),
    subscribe(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    decide(id, verdict) {
      const entry = pending.get(id)
      if (!entry || entry.deciding || entry.item.kind !== 'approval') return notPending(id)
      const { item } = entry
      const sent = entry.settle({
        requestId: item.id,
        callId: item.callId,
        digest: item.digest,
        approved: verdict.approved,
        ...(verdict.reason ? { reason: verdict.reason } : {}),
        ...(verdict.approved && verdict.arguments !== undefined ? { arguments: verdict.arguments } : {}),
        reviewer,
        decidedAt: clock.now(),
      })
      if (!sent) return notPending(id)
      entry.deciding = true
      return { ok: true }
    },
    answer(id, text) {
      const entry = pending.get(id)
      if (!entry || entry.deciding || entry.item.kind !== 'question') return notPending(id)
      if (!entry.settle({ questionId: id, answer: text, answeredBy: reviewer, answeredAt: clock.now() })) return notPending(id)
      entry.deciding = true
      return { ok: true }
    },
    async steer(runId, text, signal) {
      const run = knownRun(runId)
      await sendSteering({
        bus,
        subjects,
        agentId: run.agentId,
        runId,
        text,
        from: reviewer,
        clock,
        ...signer,
        ...(signal ? { signal } : {}),
      })
    },
    async cancel(runId, reason, signal) {
      const run = knownRun(runId)
      const reply = await sendControl({
        bus,
        subjects,
        agentId: run.agentId,
        request: { type: 'control.cancel', runId, from: reviewer, ...(reason ? { reason } : {}) },
        ...signer,
        ...(signal ? { signal } : {}),
      })
      return reply.cancelled ?? []
    },
    close() {
      stop.abort()
      for (const service of services) service.close()
      events.unsubscribe()
      inspection.unsubscribe()
      listeners.clear()
    },
  }

  function notPending(id: string): DecideResult {
    const done = settled.find((s) => s.id === id)
    return { ok: false, code: 'NOT_PENDING', ...(done ? { settled: done } : {}) }
  }
}

/** A page asked for something the console cannot do (an unknown run, an empty correction). */
export class ConsoleRequestError extends SignalboxError {
  declare readonly code: 'UNKNOWN_RUN' | 'BAD_REQUEST'
  constructor(code: 'UNKNOWN_RUN' | 'BAD_REQUEST', message: string) {
    super(code, message, { fault: 'user' })
  }
}
