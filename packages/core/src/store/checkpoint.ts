import { z } from 'zod/v4'
import { discriminatedUnion } from '../portable-zod.ts'
import { ApprovalDecisionMessage, ApprovalRequestMessage, QuestionMessage } from '../protocol/schemas.ts'
import { FINISHED_STATUSES } from '../run-status.ts'

/**
 * What a stored run holds to continue where it stood, version 2. Persisted data is versioned like
 * wire data: a reader refuses a version it does not know instead of guessing (older or newer: a
 * checkpoint is never upgraded in place). Frozen samples per version live in
 * `packages/core/test/store/fixtures/`.
 *
 * The transcript is NOT in here: it is an append-only message log beside the checkpoint, and the
 * checkpoint only says how many of its messages belong to the run (`transcript.length`). So a
 * 200-step run writes each message once, not 200 growing transcripts.
 */
export const CHECKPOINT_VERSION = 2

const epochMs = z.number().int().nonnegative()
const count = z.number().int().nonnegative()

/** A few short strings kept with a run for its instrumentations (at most 16, each at most 1024 characters). */
export const RunCarry = z
  .record(z.string().min(1).max(64), z.string().max(1024))
  .refine((carry) => Object.keys(carry).length <= 16, { message: 'at most 16 entries' })
export type RunCarry = z.infer<typeof RunCarry>

/**
 * Where a run stands, as the store lists it. `waiting`: on a person (approval, question).
 * `parked`: stored, not finished, but it cannot be continued (its stored state cannot be loaded:
 * see `RunParking`); no host claims it again, a person looks at it.
 */
export const StoredRunStatus = z.enum(['running', 'waiting', ...FINISHED_STATUSES, 'parked'])
export type StoredRunStatus = z.infer<typeof StoredRunStatus>
export const FINISHED_RUN_STATUSES: readonly StoredRunStatus[] = FINISHED_STATUSES
/** The runs a host may continue: not finished, not parked. */
export const RESUMABLE_RUN_STATUSES: readonly StoredRunStatus[] = ['running', 'waiting']

/** Why a run was parked, by whom and when (what `signalbox runs` shows). */
export const RunParking = z.object({
  /** The error that stopped it (`RUN_TRANSCRIPT_GAP`, `CHECKPOINT_INVALID`, ...). */
  code: z.string().min(1).max(64),
  message: z.string().max(4096),
  /** The host (lease owner id) that found it. */
  by: z.string().min(1).max(256),
  at: epochMs,
})
export type RunParking = z.infer<typeof RunParking>

/**
 * Who runs the run, until when. `epoch` goes up by one at every claim: it fences a former owner
 * (its writes carry an older epoch and lose, see `message-log.ts`).
 */
export const RunLease = z.object({
  owner: z.string().min(1).max(256),
  epoch: count,
  /** Epoch ms on the owner's clock; after it, another process may claim the run. */
  expiresAt: epochMs,
})
export type RunLease = z.infer<typeof RunLease>

const ToolResult = z.object({
  /**
   * What the model read of the call (after the `afterToolExecution` hooks); the tool's raw output
   * only when the agent keeps it (`storeRawToolOutput`).
   */
  output: z.string(),
  isError: z.boolean(),
  /** A `ToolOutcome`, or `outcome_unknown` for a call cut off by a crash. */
  outcome: z.string().min(1).max(64),
  /** The call handed the run over (a `Handoff`): a resumed run ends with the same hand-off. */
  handoff: z.object({ to: z.string().min(1).max(256), reason: z.string().max(16_384).optional() }).optional(),
})
export type LedgerToolResult = z.infer<typeof ToolResult>

/** One tool call of the run: `started` is written before the tool runs, `finished` after. */
export const LedgerEntry = discriminatedUnion('state', [
  z.object({
    state: z.literal('started'),
    callId: z.string().min(1).max(256),
    toolName: z.string().min(1).max(64),
    idempotencyKey: z.string().min(1).max(600),
    startedAt: epochMs,
  }),
  z.object({
    state: z.literal('finished'),
    callId: z.string().min(1).max(256),
    toolName: z.string().min(1).max(64),
    idempotencyKey: z.string().min(1).max(600),
    startedAt: epochMs,
    finishedAt: epochMs,
    result: ToolResult,
  }),
])
export type LedgerEntry = z.infer<typeof LedgerEntry>

const wire = { v: true, type: true } as const
/** The exact request reviewers were shown, with its absolute deadline (re-armed on resume). */
export const PendingApproval = ApprovalRequestMessage.omit(wire)
export type PendingApproval = z.infer<typeof PendingApproval>
export const PendingQuestion = QuestionMessage.omit(wire)
export type PendingQuestion = z.infer<typeof PendingQuestion>
/** A decision already applied: a re-delivery of the same `requestId` is ignored (and audited as a duplicate). */
export const AppliedDecision = ApprovalDecisionMessage.omit(wire)
export type AppliedDecision = z.infer<typeof AppliedDecision>

export const QueuedSteering = z.object({ text: z.string(), from: z.string(), at: epochMs })

export const Checkpoint = z.object({
  v: z.literal(CHECKPOINT_VERSION),
  type: z.literal('run.checkpoint'),
  runId: z.string().min(1).max(256),
  agentId: z.string().min(1).max(64),
  runPath: z.array(z.string()).max(64),
  status: StoredRunStatus,
  /** XState's `getPersistedSnapshot()` with the transcript taken out of the context (opaque here). */
  snapshot: z.unknown(),
  /** How many messages of the run's message log make up the transcript at this checkpoint. */
  transcript: z.object({ length: count }),
  usage: z.object({ promptTokens: count, completionTokens: count, totalTokens: count }),
  pending: z.object({ approvals: z.array(PendingApproval), questions: z.array(PendingQuestion) }),
  appliedDecisions: z.array(AppliedDecision),
  /** Corrections received and not yet applied. */
  steering: z.array(QueuedSteering),
  /** Last durable steering message consumed (stream sequence), so a resumed consumer starts after it. */
  steeringCursor: count.optional(),
  /** Tool calls of the current reply (older turns live in the transcript and are pruned). */
  ledger: z.array(LedgerEntry),
  lease: RunLease.optional(),
  /** Set with status `parked`. */
  parked: RunParking.optional(),
  /**
   * A root run that ended handing the conversation over: `pending` until the next agent's run
   * exists (its id derived from this run's), so that a host taking over follows a hand-off the
   * crashed process had not followed yet. The run keeps a lease while it is pending.
   */
  handoff: z
    .object({ to: z.string().min(1).max(256), reason: z.string().max(16_384).optional(), pending: z.boolean() })
    .optional(),
  /**
   * What the agent's instrumentations keep with the run (`Instrumentation.carry`), e.g. its W3C
   * trace context (`traceparent`, `tracestate`): a process that resumes the run continues its trace.
   */
  carry: RunCarry.optional(),
  createdAt: epochMs,
  savedAt: epochMs,
})
export type Checkpoint = z.infer<typeof Checkpoint>

/** A checkpoint as read back, with the store's revision (the compare-and-set token). */
export interface StoredRun {
  checkpoint: Checkpoint
  revision: number
}
