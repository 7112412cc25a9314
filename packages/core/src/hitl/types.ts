/**
 * The human-in-the-loop contracts. Reviewers and answerers are separate actors: the agent
 * sends a request and waits (abortable) for one answer. In-process they are plain objects;
 * over the bus they are remote services speaking `protocol/`.
 */

/** What a reviewer is shown: the exact call that will run if approved. */
export interface ApprovalRequest {
  /** Unique per request (a call may be asked once). */
  requestId: string
  agentId: string
  runId: string
  /** Run ids from the root of the run tree down to this run's parent (empty for a root run). */
  runPath: string[]
  /** Agent ids of the `runPath` runs, root first; set for child runs only. */
  agentPath?: string[]
  callId: string
  toolName: string
  /** The parsed, validated arguments the tool will receive. */
  arguments: unknown
  /** sha256 of the canonical JSON of `{ toolName, arguments }`: a decision must quote it. */
  digest: string
  /** Epoch milliseconds. No decision by then means the safe default (deny). */
  deadline: number
  requestedAt: number
  /**
   * The tool's JSON Schema (what the model sees), so a reviewer can check edited arguments before
   * sending them. Advisory: not covered by `digest`; the agent validates edits itself regardless.
   */
  parameters?: Record<string, unknown>
  /** The tool's description, as the model read it: what the tool does. Advisory, like `parameters`. */
  description?: string
  /** What led to the call, so a reviewer decides knowing why it is asked. Advisory, like `parameters`. */
  context?: ApprovalContext
}

/**
 * What led to a call waiting for approval, each text cut to `APPROVAL_CONTEXT_MAX_CHARS`
 * (an ellipsis marks the cut). Not covered by the digest nor by a signature: the call itself is
 * `toolName` and `arguments`.
 */
export interface ApprovalContext {
  /** What the run was asked to do (its input). */
  input?: string
  /** The model's last text before the call (the reply asking for it, or an earlier one). */
  lastText?: string
}

export interface ApprovalDecision {
  requestId: string
  callId: string
  digest: string
  approved: boolean
  reason?: string
  /**
   * Approve with edited arguments: run the call with these instead of the ones shown. The agent
   * validates them against the tool's schema; invalid ones are refused, never run.
   */
  arguments?: unknown
  /** With `arguments`: the digest (§1.7 of the protocol) of the edited call. A signature covers it, and so the edit. */
  editedDigest?: string
  /** The request's deadline, quoted: until when the approval holds (a tool host that verifies approvals checks it). */
  deadline?: number
  /** Who decided (a person, a policy, a service). */
  reviewer: string
  decidedAt: number
  /**
   * The signed message this decision came in, exactly as received (remote reviewers, when the
   * reviewer signs). A remote tool sends it with the call, so a tool host can check the reviewer's
   * signature itself instead of taking the agent's word.
   */
  evidence?: Record<string, unknown>
}

/**
 * Decides approval requests. `R` types the requests it is given: `ApprovalRequestOf<typeof tools>`
 * (what `createAgent({ tools, reviewer })` gives an inline reviewer) has per-tool `arguments`,
 * told apart by `toolName`; plain `Reviewer` takes any request.
 */
export interface Reviewer<R extends ApprovalRequest = ApprovalRequest> {
  /**
   * Makes the request answerable before anyone is told of it: a remote reviewer stores it and
   * starts listening for the decision here. The agent emits `approval.requested` only once this
   * resolves (at once when absent), then calls `review`. Rejecting makes the approval unavailable.
   */
  open?(request: R, options: ReviewOptions): Promise<void>
  /** Resolves with the reviewer's decision. Must stop waiting when `signal` aborts. */
  review(request: R, options: ReviewOptions): Promise<ApprovalDecision>
  /**
   * Asked at the deadline of a stored run's request (an agent with a store): the decision that was
   * stored for it by its deadline, by the store's clock (not the time the reviewer wrote), which no
   * process received in time (it was down). The agent applies it instead of denying as a timeout.
   * `undefined` when there is none. Must stop waiting when `signal` aborts.
   */
  recover?(request: R, options: { signal: AbortSignal }): Promise<ApprovalDecision | undefined>
  /**
   * The agent no longer waits for a decision on `request`: a correction cancelled the call (`by`
   * sent it). Called once the review's signal has aborted; a remote reviewer tells every reviewer,
   * so the request leaves their inboxes at once instead of waiting for a decision nobody applies.
   */
  withdraw?(request: R, withdrawal: { reason: string; by?: string }): void
}

/** What the agent gives its reviewer with each request (`open` and `review`). */
export interface ReviewOptions {
  signal: AbortSignal
  /**
   * Tell the agent of a decision the reviewer received for this request and refused to apply
   * (forged, mismatched, late): the agent emits `approval.rejected` and writes its audit entry,
   * once. Kept valid after the review ended, for late decisions. Absent for callers that are not
   * an agent: the reviewer then records the rejection itself. `actor`: who provably sent it, as
   * the reviewer's trust policy names them (audited instead of the name the decision claims);
   * absent without a policy.
   */
  rejected?(decision: unknown, reason: string, actor?: string): void
  /**
   * The run is stored (an agent with a store): after a crash it resumes, possibly in another
   * process, and waits on this same request. A remote reviewer then keeps the request open (no
   * `approval.alive` heartbeats, so it is not withdrawn as orphaned) and reads decisions made
   * while no process ran.
   */
  durable?: boolean
}

export interface Question {
  questionId: string
  agentId: string
  runId: string
  runPath: string[]
  /** Agent ids of the `runPath` runs, root first; set for child runs only. */
  agentPath?: string[]
  callId: string
  question: string
  /**
   * JSON Schema the answer must match, the answer text being that value as JSON (e.g. the fields
   * an MCP server asks the user for): an answerer that can, shows a form.
   */
  answerSchema?: Record<string, unknown>
  deadline: number
  askedAt: number
}

export interface Answer {
  questionId: string
  answer: string
  /** Who answered. */
  answeredBy: string
  answeredAt: number
}

export interface Answerer {
  answer(question: Question, options: AnswerOptions): Promise<Answer>
  /**
   * Asked when a stored run resumes after its question's deadline: the answer that was stored for
   * it by the deadline, by the store's clock (not the time the answerer wrote), which no process
   * received (it was down). `undefined` when there is none: the question timed out.
   */
  recover?(question: Question, options: AnswerOptions): Promise<Answer | undefined>
}

/** What the asking tool gives its answerer with each question. */
export interface AnswerOptions {
  signal: AbortSignal
  /**
   * Tell the agent of an answer the answerer received for this question and refused (forged, for
   * another question, late): the agent writes a `question.rejected` audit entry, once. Kept valid
   * after the question was answered, for late answers. `actor`: who provably sent it, as the
   * answerer's trust policy names them; absent without a policy.
   */
  rejected?(answer: unknown, reason: string, actor?: string): void
  /**
   * The run is stored (an agent with a store): after a crash it resumes and waits on this same
   * question. A remote answerer then reads the answers given while no process ran.
   */
  durable?: boolean
}

/** Every kind of audit entry signalbox writes. */
export const AUDIT_KINDS = [
  'approval.granted',
  'approval.denied',
  'approval.timeout',
  'approval.unavailable',
  'approval.rejected',
  /** A decision already applied came again (a re-delivery): ignored. */
  'approval.duplicate',
  /** A tool call cut off by a crash, not run again: its effect is unknown. */
  'tool.outcome_unknown',
  /** A request whose agent stopped answering (no store): withdrawn and denied by `system`. */
  'approval.orphaned',
  /** A tool host that verifies approvals refused a call: it carried no valid signed approval for exactly that call. */
  'tool.refused',
  'steering.applied',
  'question.answered',
  'question.timeout',
  /** An answer that was refused (forged, for another question, late): recorded, never given to the model. */
  'question.rejected',
] as const
export type AuditKind = (typeof AUDIT_KINDS)[number]

/** One line of the audit trail: who decided what, when, and exactly what they saw. */
export interface AuditEntry {
  /** One of `AuditKind`; a reader may meet kinds added later. */
  kind: AuditKind | (string & {})
  agentId: string
  runId: string
  runPath: string[]
  callId?: string
  toolName?: string
  /** What the person was shown (the exact arguments, the question, the correction). */
  shown?: unknown
  digest?: string
  /** The arguments the reviewer edited before approving (what ran, when valid). */
  edited?: unknown
  /** Digest of the edited call: what actually ran. */
  editedDigest?: string
  /** `approved`, `denied`, `timeout`, the answer text, the correction text... */
  decision?: string
  reason?: string
  /**
   * Who decided; `system` for timeouts. For a signed message (a decision, an answer, a
   * correction), the name the agent's trust policy gives the key that signed it, never the name
   * the message gives itself (that one is `claimed`).
   */
  actor: string
  /** The name the recorded message claimed (`reviewer`, `answeredBy`, `from`), when it is not `actor`. */
  claimed?: string
  requestedAt?: number
  /** When it was decided: the reviewer's or answerer's clock for their decisions, the agent's for timeouts. */
  decidedAt: number
  /** `decidedAt − requestedAt` (two clocks for a remote reviewer: a skewed clock skews it). */
  latencyMs?: number
  /** Approvals: when the agent applied the outcome, by its own clock (the call released to run, or refused). */
  releasedAt?: number
  /** The signed message the entry records (decision, answer, steering), as received. */
  evidence?: Record<string, unknown>
  /** Public nkey of the party that wrote the entry, and its signature over the entry (docs/protocol.md, "Signing"). */
  signer?: string
  signature?: string
}

export interface AuditLog {
  record(entry: AuditEntry): void | Promise<void>
}
