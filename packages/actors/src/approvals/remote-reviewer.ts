import {
  type AgentEvent,
  type ApprovalDecision,
  type ApprovalRequest,
  type AuditLog,
  type Clock,
  type Reviewer,
  type ReviewOptions,
  systemClock,
} from '@signalbox/core'
import { type Bus, BusClosedError, createSubjects, type Subjects } from '@signalbox/core/bus'
import { agentPurpose, decisionMismatch, rejectedDecisionAudit } from '@signalbox/core/internal'
import {
  type ApprovalAliveMessage,
  ApprovalDecisionMessage,
  type ApprovalRequestMessage,
  type ApprovalWithdrawnMessage,
  encodeMessage,
  PROTOCOL_VERSION,
} from '@signalbox/core/protocol'
import { publishEvent } from '../agents/agent-connection.ts'
import { DurableRequester } from '../requests/durable-request.ts'
import { rejectedReplies } from '../requests/rejected-replies.ts'
import { createRejectionReporter } from '../requests/rejections.ts'
import { signedReply, signerProblem } from '../requests/signed-replies.ts'
import { withdrawalOnStop } from '../requests/withdrawal.ts'
import { provenActor, type TrustPolicy } from '../trust/policy.ts'
import type { Signer } from '../trust/sign.ts'
import type { EvidenceBook } from '../trust/signed-audit.ts'

export interface RemoteReviewerOptions {
  bus: Bus
  subjects?: Subjects
  /**
   * Where rejected (late, duplicate, mismatched, forged) decisions are recorded as
   * `approval.rejected` when the caller is not an agent. An agent records them itself (in its own
   * audit log, with one `approval.rejected` event: `ReviewOptions.rejected`), so this is only for
   * a reviewer used on its own. Default: the audit trail on the bus (`busAuditLog`); `false` records none.
   */
  audit?: AuditLog | false
  /**
   * Who may decide: a decision must be signed by a key the policy allows for the tool (never the
   * agent's own key). Without one (the embedded, single-process case) decisions are not checked.
   */
  trust?: TrustPolicy
  /** The agent's key: approval requests are signed with it, and it may never approve its own calls. */
  signer?: Signer
  /** Accepted signed decisions are kept here for the audit entry that records them (`signedAuditLog`). */
  evidence?: EvidenceBook
  /**
   * Also told of every rejected decision (the `approval.rejected` event: the agent emits it, so
   * `agent.on` and the bus see it once; without an agent, this reviewer publishes it on
   * `agents.<agent>.events.approval.rejected`).
   */
  onRejected?(event: Extract<AgentEvent, { type: 'approval.rejected' }>): void
  clock?: Clock
  /**
   * Read the decisions subject from the start of the stream, so a run resumed after a restart
   * gets a decision made while no process was running. Default: on for the requests of stored
   * runs (the agent has a store and says so with `ReviewOptions.durable`), off otherwise.
   */
  replayDecisions?: boolean
  /**
   * While a request waits, publish `approval.alive` for it at this interval, so that reviewer
   * services withdraw it (as orphaned) once this process is gone. Default 2 s, off with
   * `replayDecisions`. Never for the requests of stored runs (`ReviewOptions.durable`): they
   * resume elsewhere, so their requests stay open.
   */
  heartbeatMs?: number | false
}

/** See `RemoteReviewerOptions.heartbeatMs`. */
export const DEFAULT_APPROVAL_HEARTBEAT_MS = 2_000

export interface RemoteReviewer extends Reviewer {
  /** Stops listening; pending reviews fail (the agent then denies by default). */
  close(): void
}

/**
 * The agent's side of remote approval: the request goes out durably on
 * `approvals.<agent>`, decisions come back on `approvals.<agent>.decisions`. Both travel on the
 * durable path, so a server restart in between loses neither. With a trust policy, only a decision
 * signed by a key allowed for the tool is applied; anything else is recorded and the request stays
 * pending until a valid decision or its deadline.
 */
export function remoteReviewer(options: RemoteReviewerOptions): RemoteReviewer {
  const { bus, trust, signer } = options
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const rejections = rejectedReplies(options.audit, { bus, subjects, signer })
  const report = createRejectionReporter({ bus, subjects, component: 'agent-approvals', clock })
  const requester = new DurableRequester<typeof ApprovalDecisionMessage, ApprovalRequest>({
    bus,
    schema: ApprovalDecisionMessage,
    idOf: (decision) => decision.requestId,
    replySubjectOf: (request) => subjects.approvalDecisions(request.agentId),
    replyName: 'Decision',
    ...(options.replayDecisions ? { replay: true } : {}),
    // One consumer per agent (a host's connection serves several): `<user>_<agent>_decisions`.
    purposeOf: (request) => agentPurpose('decisions', request.agentId),
    report,
    onRejected: ({ reply, reason, context: request }) => {
      const at = clock.now()
      // Audited under who provably sent it, never the reviewer it names (without a policy: that name).
      const actor = trust === undefined ? undefined : provenActor(trust, reply)
      const byAgent = rejections.record(request.requestId, reply, reason, actor, () =>
        rejectedDecisionAudit({ run: request, request, decision: reply, reason, at, actor }),
      )
      const event = {
        type: 'approval.rejected' as const,
        agentId: request.agentId,
        runId: request.runId,
        runPath: request.runPath,
        ...(request.agentPath ? { agentPath: request.agentPath } : {}),
        at,
        request,
        decision: reply,
        reason,
      }
      // The agent emitted it (agent.on, and the bus through connectAgent); else it is said here.
      if (!byAgent) publishEvent(bus, subjects, event)
      try {
        options.onRejected?.(event)
      } catch {
        // A listener must not stop the review.
      }
    },
  })

  /** Why `decision` may not be applied to `request`: binding first, then who signed it. */
  const check = (request: ApprovalRequest, decision: ApprovalDecisionMessage): string | undefined =>
    decisionMismatch(request, decision) ??
    signerProblem(decision, {
      trust,
      signer,
      context: { toolName: request.toolName, agentId: request.agentId },
      ownKey: 'decides its own calls',
    })

  // A run that replays its decisions resumes after a crash: its requests must stay open, not be orphaned.
  const heartbeatMs =
    options.heartbeatMs === false || (options.heartbeatMs === undefined && options.replayDecisions)
      ? undefined
      : (options.heartbeatMs ?? DEFAULT_APPROVAL_HEARTBEAT_MS)
  const heartbeats = heartbeatMs === undefined ? undefined : new ApprovalHeartbeats(bus, subjects, clock, heartbeatMs)

  /**
   * The decision as the agent applies it (the signer's name from the policy, the evidence kept).
   * A signed one keeps the message as received: a remote tool sends it with the call, for a tool
   * host that verifies approvals itself (whether or not this agent checks signatures).
   */
  const applied = (request: ApprovalRequest, answer: ApprovalDecisionMessage): ApprovalDecision => {
    const decision = signedReply(answer, {
      trust,
      nameField: 'reviewer',
      evidence: { book: options.evidence, key: `decision:${request.callId}:${request.digest}` },
    })
    return answer.signer === undefined ? decision : { ...decision, evidence: { ...answer } }
  }

  /** Requests stored by `open`, waiting for `review` to take their decision. */
  const opened = new Map<string, Promise<ApprovalDecision>>()
  /** Requests sent and not decided: a withdrawal is published for them, once. */
  const undecided = new Map<string, { request: ApprovalRequest; durable: boolean }>()

  /** Tells the reviewers the agent no longer waits for `request` (durable, signed by the agent's key). */
  const publishWithdrawal = (request: ApprovalRequest, withdrawal: { reason: string; by?: string | undefined }) => {
    if (!undecided.delete(request.requestId)) return
    const unsigned: ApprovalWithdrawnMessage = {
      v: PROTOCOL_VERSION,
      type: 'approval.withdrawn',
      requestId: request.requestId,
      agentId: request.agentId,
      callId: request.callId,
      digest: request.digest,
      reason: withdrawal.reason,
      ...(withdrawal.by !== undefined ? { by: withdrawal.by } : {}),
      withdrawnAt: clock.now(),
    }
    const message = signer ? signer.sign(unsigned) : unsigned
    bus
      .durablePublish(subjects.approvalWithdrawals(request.agentId), encodeMessage(message), {
        msgId: `withdrawn-${request.requestId}`,
        signal: AbortSignal.timeout(30_000),
      })
      .catch(() => {
        // Best effort: without it the request leaves the reviewers at its deadline, or as orphaned.
      })
  }
  const send = async (
    request: ApprovalRequest,
    { signal, durable = false }: ReviewOptions,
  ): Promise<{ decided: Promise<ApprovalDecision> }> => {
    // A stored run's request outlives this process (it resumes elsewhere): never marked for orphaning.
    const beating = heartbeats !== undefined && !durable
    const unsigned: ApprovalRequestMessage = {
      v: PROTOCOL_VERSION,
      type: 'approval.request',
      ...request,
      ...(beating ? { heartbeatMs } : {}),
    }
    const message = signer ? signer.sign(unsigned) : unsigned
    // Until decided, a withdrawal is owed. The agent stopped waiting without a decision: the machine
    // names a correction (`withdraw`) in the same step; anything else (a cancel, the run's end) is
    // said here. Not at the deadline (reviewers know it), and for a stored run's request only when
    // its run was cancelled (it ends there): a process that stops is no withdrawal (the run resumes
    // elsewhere and waits for the same request). Watched from before the request is stored: a
    // person may see it, and the run stop, before its store is confirmed here.
    undecided.set(request.requestId, { request, durable })
    /** A decision reached this process (a copy of it is a duplicate here, whatever became of the run). */
    let decidedHere = false
    const stopped = () =>
      queueMicrotask(() => {
        const withdrawal = withdrawalOnStop(signal.reason)
        if (durable && withdrawal.cancel === undefined) {
          // Its run goes on elsewhere (or here, after a restart): a decision for it is not late.
          undecided.delete(request.requestId)
          if (!decidedHere) requester.forget(request.requestId)
        } else if (clock.now() >= request.deadline) undecided.delete(request.requestId)
        else publishWithdrawal(request, withdrawal)
      })
    if (signal.aborted) stopped()
    else signal.addEventListener('abort', stopped, { once: true })
    let reply: Promise<ApprovalDecisionMessage>
    try {
      ;({ reply } = await requester.send({
        id: request.requestId,
        context: request,
        subject: subjects.approvals(request.agentId),
        message,
        check: (decision) => check(request, decision),
        // A stored run may have been decided while no process ran: read the decisions from the start.
        ...(durable ? { replay: true } : {}),
        signal,
      }))
    } catch (error) {
      // Not sent, or given up while sending (the abort above says so to whoever saw it).
      if (!signal.aborted) undecided.delete(request.requestId)
      throw error
    }
    reply.then(
      () => {
        decidedHere = true
      },
      () => {},
    )
    const decided = reply.then((answer) => applied(request, answer))
    decided.catch(() => {})
    decided.then(
      () => undecided.delete(request.requestId),
      () => {},
    )
    if (heartbeats && beating) {
      heartbeats.add(request)
      const stop = () => heartbeats.remove(request)
      decided.then(stop, stop)
    }
    return { decided }
  }

  return {
    async open(request, reviewOptions): Promise<void> {
      const { signal } = reviewOptions
      rejections.keep(request.requestId, reviewOptions.rejected)
      const { decided } = await send(request, reviewOptions)
      opened.set(request.requestId, decided)
      // Kept until `review` takes it (a decision may already be in), or the wait is dropped.
      signal.addEventListener('abort', () => opened.delete(request.requestId), { once: true })
    },
    async review(request, reviewOptions): Promise<ApprovalDecision> {
      rejections.keep(request.requestId, reviewOptions.rejected)
      const decided = opened.get(request.requestId)
      opened.delete(request.requestId)
      return decided ?? (await send(request, reviewOptions)).decided
    },
    /**
     * A decision the stream stored by the request's deadline (the server's timestamp, which the
     * reviewer cannot backdate), read once every decision stored before this process listened is
     * in: with `replayDecisions`, one made while no agent process ran.
     */
    async recover(request, { signal }): Promise<ApprovalDecision | undefined> {
      signal.throwIfAborted()
      const reply = await requester.storedInTime(request.requestId, request, request.deadline, (r) => check(request, r))
      return reply === undefined ? undefined : applied(request, reply)
    },
    withdraw(request, withdrawal) {
      publishWithdrawal(request, withdrawal)
    },
    close() {
      heartbeats?.close()
      requester.close(new BusClosedError('the bus reviewer was closed'))
    },
  }
}

/**
 * `approval.alive` for every request this process waits on, one message per agent per interval:
 * the reviewer services' proof that someone will still apply the decision.
 */
class ApprovalHeartbeats {
  readonly #pending = new Map<string, Set<string>>()
  readonly #bus: Bus
  readonly #subjects: Subjects
  readonly #clock: Clock
  readonly #intervalMs: number
  #timer: unknown

  constructor(bus: Bus, subjects: Subjects, clock: Clock, intervalMs: number) {
    this.#bus = bus
    this.#subjects = subjects
    this.#clock = clock
    this.#intervalMs = intervalMs
  }

  add(request: ApprovalRequest): void {
    let ids = this.#pending.get(request.agentId)
    if (ids === undefined) {
      ids = new Set()
      this.#pending.set(request.agentId, ids)
    }
    ids.add(request.requestId)
    // At once: a reviewer may be looking at it already.
    this.#beat(request.agentId)
    this.#schedule()
  }

  remove(request: ApprovalRequest): void {
    const ids = this.#pending.get(request.agentId)
    ids?.delete(request.requestId)
    if (ids?.size === 0) this.#pending.delete(request.agentId)
  }

  close(): void {
    this.#pending.clear()
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer)
    this.#timer = undefined
  }

  #schedule(): void {
    if (this.#timer !== undefined) return
    this.#timer = this.#clock.setTimeout(() => {
      this.#timer = undefined
      for (const agentId of this.#pending.keys()) this.#beat(agentId)
      if (this.#pending.size > 0) this.#schedule()
    }, this.#intervalMs)
  }

  #beat(agentId: string): void {
    const ids = this.#pending.get(agentId)
    if (ids === undefined || ids.size === 0) return
    const message: ApprovalAliveMessage = {
      v: PROTOCOL_VERSION,
      type: 'approval.alive',
      agentId,
      requestIds: [...ids],
      at: this.#clock.now(),
    }
    try {
      this.#bus.publish(this.#subjects.alive(agentId), encodeMessage(message))
    } catch {
      // Lossy by design: a missed beat or two is what the reviewer's margin (three beats) is for.
    }
  }
}
