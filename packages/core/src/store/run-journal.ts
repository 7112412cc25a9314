import type { Clock } from '../clock.ts'
import type { ApprovalDecision } from '../hitl/types.ts'
import type { Message } from '../messages.ts'
import { finishedStatus } from '../run-status.ts'
import type {
  AppliedDecision,
  Checkpoint,
  LedgerEntry,
  LedgerToolResult,
  PendingQuestion,
  RunCarry,
  StoredRunStatus,
} from './checkpoint.ts'
import { CHECKPOINT_VERSION } from './checkpoint.ts'
import { findCall, finishCall, startCall } from './ledger.ts'
import type { RunStore } from './run-store.ts'

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
    current: { approval?: unknown } | undefined
    status: string
  }
}

export interface RunJournalOptions {
  store: RunStore
  runId: string
  agentId: string
  runPath: string[]
  owner: string
  leaseMs: number
  clock: Clock
  /** What was stored, when the run is resumed (absent for a new run). */
  resumed?: { checkpoint: Checkpoint; revision: number }
  /** For a new run: the last steering message the agent had consumed when the run began. */
  steeringCursor?: number
  /** For a new run: what its instrumentations keep with it (asked at each save until it gives something). */
  carry?: () => RunCarry | undefined
  /** The run cannot go on: a write failed or another process took it (compare-and-set lost). */
  onLost?(error: unknown): void
}

/** Marks, in a stored child actor's input, where the transcript was taken out (it is stored once, in the log). */
export const TRANSCRIPT_REF = '$transcript'

/**
 * The durable side of one run: its write queue, tool-call ledger and applied decisions. Saves are
 * serialized (each knows the revision the previous one returned) and coalesced: a save asked for
 * while another waits to start is the same save, and it writes the run as it stands when it starts
 * (only the newest checkpoint matters). Each save appends the messages added since the last one to
 * the log, then writes the checkpoint, so the transcript is written once, not once per step.
 */
export class RunJournal {
  readonly runId: string
  readonly #options: RunJournalOptions
  #actor: JournaledActor | undefined
  #revision: number | undefined
  #persistedLength: number
  #epoch: number
  #createdAt: number
  #ledger: LedgerEntry[]
  #applied: AppliedDecision[]
  /** The approval wait the stored run was resumed in: already durable, so re-entering it writes nothing. */
  #resumedWait: string | undefined
  /** The question the call in hand waits on (`ask_human`), kept until it is answered or timed out. */
  #questions: PendingQuestion[]
  #steeringCursor: number | undefined
  /** What the instrumentations keep with the run: kept as first stored, across resumes. */
  #carried: RunCarry | undefined
  /** A save that waits for its turn (not started): later requests join it. */
  #queued: Promise<void> | undefined
  /** Whether the queued save must be synced (one request that needs it is enough). */
  #queuedSync = false
  /** Starts the queued unsynced save now instead of after its grace (see `#defer`). */
  #startDeferred: (() => void) | undefined
  #tail: Promise<void> = Promise.resolve()
  #failure: unknown
  #finished = false
  #seen: { messages: unknown; steering: unknown; approval: unknown } = {
    messages: undefined,
    steering: undefined,
    approval: undefined,
  }
  readonly #abort = new AbortController()
  #renewTimer: unknown
  /** Told when the run cannot go on (a write failed, or the compare-and-set was lost): the owner stops it. */
  onLost: (error: unknown) => void

  constructor(options: RunJournalOptions) {
    this.#options = options
    this.runId = options.runId
    const stored = options.resumed
    this.#revision = stored?.revision
    this.#persistedLength = stored?.checkpoint.transcript.length ?? 0
    this.#epoch = stored?.checkpoint.lease?.epoch ?? 0
    this.#createdAt = stored?.checkpoint.createdAt ?? options.clock.now()
    this.#ledger = stored ? [...stored.checkpoint.ledger] : []
    this.#applied = stored ? [...stored.checkpoint.appliedDecisions] : []
    this.#questions = stored ? [...stored.checkpoint.pending.questions] : []
    this.#resumedWait = stored?.checkpoint.pending.approvals[0]?.requestId
    this.#steeringCursor = stored ? stored.checkpoint.steeringCursor : options.steeringCursor
    this.#carried = stored?.checkpoint.carry
    this.onLost = options.onLost ?? (() => {})
  }

  /** The actor whose snapshots this journal saves; its first snapshot is saved at once. */
  attach(actor: JournaledActor): void {
    this.#actor = actor
    this.#renew()
  }

  /** Called with every snapshot: saves at the settled boundaries only (transcript, steering or wait changed, run ended). */
  observe(snapshot: JournaledSnapshot): void {
    // Stopped (not finished): the process lets go of the run; what is stored stays resumable.
    if (snapshot.status === 'stopped') return
    const { context } = snapshot
    const approval = snapshot.hasTag('human') ? context.current?.approval : undefined
    const seen = this.#seen
    if (
      snapshot.status === 'active' &&
      seen.messages === context.messages &&
      seen.steering === context.steering &&
      seen.approval === approval
    ) {
      return
    }
    this.#seen = { messages: context.messages, steering: context.steering, approval }
    // Synced only when the run ends (its result resolves once stored); the rest can wait for the next sync.
    this.save({ sync: snapshot.status !== 'active' }).catch(() => {})
  }

  /**
   * Saves the run as it stands when the write starts; resolves once it is written. `sync` (the
   * default): durable against a power loss before this resolves, used before a side effect or a
   * wait for a person. `sync: false` (a model reply, a tool's result, steering, a lease renewal):
   * atomic and safe against the death of the process; the next synced save covers it.
   */
  save(options: { sync?: boolean } = {}): Promise<void> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure)
    if (options.sync !== false) {
      this.#queuedSync = true
      // A synced request does not wait out the grace of the unsynced one it joins.
      this.#startDeferred?.()
    }
    if (this.#queued) return this.#queued
    const queued = this.#tail
      .then(() => (this.#queuedSync ? undefined : this.#defer()))
      .then(() => {
        this.#queued = undefined
        const sync = this.#queuedSync
        this.#queuedSync = false
        return this.#write(sync)
      })
    this.#queued = queued
    this.#tail = queued.catch(() => {})
    return queued
  }

  /**
   * An unsynced save waits one turn of the event loop before it starts, so the synced save that
   * usually follows at once joins it: a model reply that asks for a tool is stored by the blocking
   * save before the tool (one write, not two), and a tool's result and its transcript message go in
   * one write. Nothing waits on an unsynced save for its safety, so the delay costs nothing.
   */
  #defer(): Promise<void> {
    return new Promise((resolve) => {
      const immediate = setImmediate(() => {
        this.#startDeferred = undefined
        resolve()
      })
      this.#startDeferred = () => {
        clearImmediate(immediate)
        this.#startDeferred = undefined
        resolve()
      }
    })
  }

  /**
   * Makes the wait for approval `requestId` durable (a synced save) before the request is shown.
   * A run resumed in that very wait has it stored already: nothing is written (resuming 1,000
   * parked runs does not rewrite 1,000 checkpoints).
   */
  saveWait(requestId: string): Promise<void> {
    if (this.#resumedWait === requestId) return Promise.resolve()
    this.#resumedWait = undefined
    return this.save()
  }

  /**
   * Records that a call is about to run and waits until that is durable: only then may the tool
   * start. Calls run one at a time and every earlier result is in the transcript, so the ledger
   * holds just this call.
   */
  startCall(call: { callId: string; toolName: string }): Promise<void> {
    this.#ledger = startCall([], { runId: this.runId, ...call, at: this.#options.clock.now() })
    return this.save()
  }

  /** Records a call's result (saved with the next write; a crash before it leaves the call `started`). */
  finishCall(callId: string, result: LedgerToolResult): void {
    if (findCall(this.#ledger, callId) === undefined) return
    this.#ledger = finishCall(this.#ledger, callId, result, this.#options.clock.now())
    // Its question (if it asked one) is answered or timed out: no longer pending.
    this.#questions = this.#questions.filter((q) => q.callId !== callId)
    this.save({ sync: false }).catch(() => {})
  }

  /**
   * Stores the question a call asks and waits until that is durable: only then may it be shown,
   * so an answer can never come for a question no process would resume.
   */
  askQuestion(question: PendingQuestion): Promise<void> {
    this.#questions = [...this.#questions.filter((q) => q.callId !== question.callId), question]
    return this.save()
  }

  /** The question a call had asked when the run was stored, if it is still unanswered. */
  pendingQuestion(callId: string): PendingQuestion | undefined {
    return this.#questions.find((q) => q.callId === callId)
  }

  ledgerEntry(callId: string): LedgerEntry | undefined {
    return findCall(this.#ledger, callId)
  }

  decisionApplied(decision: ApprovalDecision): void {
    this.#applied = [...this.#applied, decision]
  }

  isApplied(requestId: unknown): boolean {
    return typeof requestId === 'string' && this.#applied.some((d) => d.requestId === requestId)
  }

  /** The last steering message (stream sequence) this run has seen; a resumed consumer starts after it. */
  get steeringCursor(): number | undefined {
    return this.#steeringCursor
  }

  /** The steering consumer got message `seq` (saved with the next checkpoint). */
  steeringConsumed(seq: number): void {
    if (this.#steeringCursor === undefined || seq > this.#steeringCursor) this.#steeringCursor = seq
  }

  /** Waits for every queued write. */
  async settled(): Promise<void> {
    await this.#tail
  }

  /** Stops renewing the lease and refuses further writes (the process is letting go of the run). */
  close(): void {
    this.#finished = true
    if (this.#renewTimer !== undefined) this.#options.clock.clearTimeout(this.#renewTimer)
    this.#abort.abort()
  }

  async #write(sync: boolean): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure
    const actor = this.#actor
    if (actor === undefined || this.#abort.signal.aborted) return
    const { store, runId } = this.#options
    const snapshot = actor.getSnapshot()
    if (snapshot.status === 'stopped') return
    const { context } = snapshot
    const messages = context.messages
    const length = messages.length
    const signal = this.#abort.signal
    // Everything the checkpoint holds is taken now, at one instant, so it is consistent.
    const state: CapturedState = {
      snapshot,
      persisted: persistedWithoutTranscript(actor, snapshot),
      ledger: this.#ledger,
      applied: this.#applied,
      questions: this.#questions,
    }
    try {
      // The log belongs to a stored run, so a new run is created first, then its first messages
      // appended (a crash in between leaves a run that fails to resume with RUN_TRANSCRIPT_GAP).
      const created = this.#revision === undefined
      if (created) this.#revision = await store.create(this.#checkpoint(state, length), { signal })
      const batch =
        length > this.#persistedLength
          ? { from: this.#persistedLength, epoch: this.#epoch, messages: messages.slice(this.#persistedLength) }
          : undefined
      const finished = snapshot.status !== 'active'
      if (created) {
        // A new run's checkpoint is written already: its first messages are synced on their own.
        if (batch) await store.appendMessages(runId, { ...batch, sync, signal })
      } else {
        const checkpoint = this.#checkpoint(state, length)
        const revision = this.#revision as number
        if (batch && store.saveWithMessages) {
          // One write: the messages, then the checkpoint that counts them.
          this.#revision = await store.saveWithMessages(checkpoint, { revision, sync, signal, messages: batch })
        } else {
          // The checkpoint's synced save makes the messages durable with it (one round of fsyncs).
          if (batch) await store.appendMessages(runId, { ...batch, sync: false, signal })
          this.#revision = await store.save(checkpoint, { revision, sync, signal })
        }
      }
      this.#persistedLength = length
      if (finished) this.close()
    } catch (error) {
      if (signal.aborted && this.#finished) return
      this.#failure = error
      this.close()
      this.onLost(error)
      throw error
    }
  }

  /** The run as it stands, the transcript by reference (`length` messages of the log). */
  #checkpoint({ snapshot, persisted, ledger, applied, questions }: CapturedState, length: number): Checkpoint {
    const { context } = snapshot
    const finished = snapshot.status !== 'active'
    const now = this.#options.clock.now()
    const { runId } = this.#options
    const approval = snapshot.hasTag('human')
      ? (context.current?.approval as Checkpoint['pending']['approvals'][number])
      : undefined
    return {
      v: CHECKPOINT_VERSION,
      type: 'run.checkpoint',
      runId,
      agentId: this.#options.agentId,
      runPath: this.#options.runPath,
      status: storedStatus(snapshot, approval !== undefined || questions.length > 0),
      snapshot: leanSnapshot(persisted, context.messages),
      transcript: { length },
      usage: {
        promptTokens: context.usage.promptTokens,
        completionTokens: context.usage.completionTokens,
        totalTokens: context.usage.totalTokens,
      },
      pending: { approvals: approval ? [approval] : [], questions: finishedRun(snapshot) ? [] : questions },
      appliedDecisions: applied,
      steering: context.steering,
      ...(this.#steeringCursor === undefined ? {} : { steeringCursor: this.#steeringCursor }),
      ledger,
      // A finished run has no owner: nothing is left to drive.
      ...(finished ? {} : { lease: { owner: this.#options.owner, epoch: this.#epoch, expiresAt: now + this.#options.leaseMs } }),
      ...(this.#carry() ? { carry: this.#carried } : {}),
      createdAt: this.#createdAt,
      savedAt: now,
    }
  }

  /** What the instrumentations keep with the run, asked of them until they give something. */
  #carry(): RunCarry | undefined {
    if (this.#carried === undefined) {
      const given = this.#options.carry?.()
      if (given !== undefined && Object.keys(given).length > 0) this.#carried = given
    }
    return this.#carried
  }

  /** A parked run keeps its lease: a save every `leaseMs / 3` (through the queue) extends it. */
  #renew(): void {
    if (this.#finished) return
    this.#renewTimer = this.#options.clock.setTimeout(
      () => {
        this.#renewTimer = undefined
        if (this.#finished) return
        this.save({ sync: false }).then(
          () => this.#renew(),
          () => {},
        )
      },
      Math.max(1, Math.floor(this.#options.leaseMs / 3)),
    )
  }
}

interface CapturedState {
  snapshot: JournaledSnapshot
  persisted: PersistedSnapshot
  ledger: LedgerEntry[]
  applied: AppliedDecision[]
  questions: PendingQuestion[]
}

function finishedRun(snapshot: JournaledSnapshot): boolean {
  return snapshot.status !== 'active'
}

interface PersistedSnapshot {
  context: Record<string, unknown>
  children?: Record<string, { snapshot?: { input?: { messages?: unknown } } }>
}

/**
 * XState's persisted snapshot, the context's transcript left out before XState walks the context
 * for actor references: that walk is O(transcript) per checkpoint (O(n²) over a run) for messages
 * that are stored in the log anyway.
 */
function persistedWithoutTranscript(actor: JournaledActor, snapshot: JournaledSnapshot): PersistedSnapshot {
  if (actor.logic === undefined) return actor.getPersistedSnapshot() as PersistedSnapshot
  const lean = { ...snapshot, context: { ...snapshot.context, messages: [] } }
  return actor.logic.getPersistedSnapshot(lean as never) as PersistedSnapshot
}

/** The persisted snapshot without the transcript: the context's messages and the children's copies are references to the log. */
function leanSnapshot(persisted: PersistedSnapshot, messages: Message[]): unknown {
  let children = persisted.children
  for (const [id, child] of Object.entries(children ?? {})) {
    const input = child.snapshot?.input
    if (input?.messages !== messages) continue
    children = { ...children, [id]: { ...child, snapshot: { ...child.snapshot, input: { ...input, messages: TRANSCRIPT_REF } } } }
  }
  return { ...persisted, context: { ...persisted.context, messages: [] }, ...(children ? { children } : {}) }
}

/** The stored snapshot with its transcript put back (the inverse of `leanSnapshot`). */
export function restoreTranscript(snapshot: unknown, messages: Message[]): unknown {
  const persisted = snapshot as PersistedSnapshot
  const children: Record<string, unknown> = {}
  for (const [id, child] of Object.entries(persisted.children ?? {})) {
    const input = child.snapshot?.input
    children[id] =
      input?.messages === TRANSCRIPT_REF ? { ...child, snapshot: { ...child.snapshot, input: { ...input, messages } } } : child
  }
  return { ...persisted, context: { ...persisted.context, messages }, children }
}

function storedStatus(snapshot: JournaledSnapshot, waiting: boolean): StoredRunStatus {
  if (snapshot.status !== 'active') {
    return finishedStatus(snapshot.context.status)
  }
  return waiting ? 'waiting' : 'running'
}
