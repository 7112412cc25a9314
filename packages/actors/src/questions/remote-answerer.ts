import { type Answer, type Answerer, type AuditLog, type Clock, type Question, systemClock } from '@signalbox/core'
import { type Bus, BusClosedError, createSubjects, type Subjects } from '@signalbox/core/bus'
import { agentPurpose, rejectedAnswerAudit } from '@signalbox/core/internal'
import {
  AnswerMessage,
  encodeMessage,
  PROTOCOL_VERSION,
  type QuestionMessage,
  type QuestionWithdrawnMessage,
} from '@signalbox/core/protocol'
import { DurableRequester } from '../requests/durable-request.ts'
import { rejectedReplies } from '../requests/rejected-replies.ts'
import { createRejectionReporter } from '../requests/rejections.ts'
import { signedReply, signerProblem } from '../requests/signed-replies.ts'
import { withdrawalOnStop } from '../requests/withdrawal.ts'
import { provenActor, type TrustPolicy } from '../trust/policy.ts'
import type { Signer } from '../trust/sign.ts'
import type { EvidenceBook } from '../trust/signed-audit.ts'

export interface RemoteAnswererOptions {
  bus: Bus
  subjects?: Subjects
  /** Who may answer: an answer must be signed by a key the policy lists in `answerers`. Default: not checked. */
  trust?: TrustPolicy
  /** The agent's key: it may never answer its own questions. */
  signer?: Signer
  /** Accepted signed answers are kept here for the audit entry that records them (`signedAuditLog`). */
  evidence?: EvidenceBook
  /**
   * Where refused (forged, mismatched, late) answers are recorded as `question.rejected` when the
   * caller is not an agent's ask-a-human tool (which records them in the agent's audit log:
   * `AnswerOptions.rejected`). Default: the audit trail on the bus; `false` records none.
   */
  audit?: AuditLog | false
  clock?: Clock
  /**
   * Read the answers subject from the start of the stream, so a run resumed after a restart gets
   * an answer given while no process was running. Default: on for the questions of stored runs
   * (`AnswerOptions.durable`), off otherwise.
   */
  replayAnswers?: boolean
}

export interface RemoteAnswerer extends Answerer {
  close(): void
}

/**
 * The agent's side of escalation: the question goes out durably on `ask.<agent>`, the answer
 * comes back on `ask.<agent>.answers`. Use it as the `answerer` of `askHumanTool`. With a trust
 * policy, an answer that is not signed by an allowed key is reported and never applied.
 */
export function remoteAnswerer(options: RemoteAnswererOptions): RemoteAnswerer {
  const { bus, trust, signer } = options
  const subjects = options.subjects ?? createSubjects()
  const clock = options.clock ?? systemClock
  const report = createRejectionReporter({ bus, subjects, component: 'agent-questions', clock })
  const rejections = rejectedReplies(options.audit, { bus, subjects, signer })
  const requester = new DurableRequester<typeof AnswerMessage, Question>({
    bus,
    schema: AnswerMessage,
    idOf: (answer) => answer.questionId,
    replySubjectOf: (question) => subjects.answers(question.agentId),
    replyName: 'Answer',
    purposeOf: (question) => agentPurpose('answers', question.agentId),
    report,
    ...(options.replayAnswers ? { replay: true } : {}),
    // Recorded like refused decisions: by the asking agent when it gave a sink, else here.
    onRejected: ({ reply, reason, context: question }) => {
      // Audited under who provably sent it, never the name it claims (without a policy: that name).
      const actor = trust === undefined ? undefined : provenActor(trust, reply)
      rejections.record(question.questionId, reply, reason, actor, () =>
        rejectedAnswerAudit({ question, answer: reply, reason, at: clock.now(), actor }),
      )
    },
  })
  const check = (question: Question, answer: AnswerMessage): string | undefined =>
    signerProblem(answer, { trust, signer, context: { agentId: question.agentId }, ownKey: 'answers its own questions' })
  const applied = (question: Question, reply: AnswerMessage): Answer =>
    signedReply(reply, {
      trust,
      nameField: 'answeredBy',
      evidence: { book: options.evidence, key: `answer:${question.callId}` },
    })
  /** Tells the answerers the agent no longer waits for `question` (durable, signed by the agent's key). */
  const publishWithdrawal = (question: Question, withdrawal: { reason: string; by?: string }) => {
    const unsigned: QuestionWithdrawnMessage = {
      v: PROTOCOL_VERSION,
      type: 'question.withdrawn',
      questionId: question.questionId,
      agentId: question.agentId,
      callId: question.callId,
      reason: withdrawal.reason,
      ...(withdrawal.by !== undefined ? { by: withdrawal.by } : {}),
      withdrawnAt: clock.now(),
    }
    bus
      .durablePublish(subjects.questionWithdrawals(question.agentId), encodeMessage(signer ? signer.sign(unsigned) : unsigned), {
        msgId: `withdrawn-${question.questionId}`,
        signal: AbortSignal.timeout(30_000),
      })
      .catch(() => {
        // Best effort: without it the question leaves the answerers at its deadline.
      })
  }

  return {
    /** An answer the stream stored by the question's deadline (the server's timestamp), read once caught up. */
    async recover(question, { signal }): Promise<Answer | undefined> {
      signal.throwIfAborted()
      const reply = await requester.storedInTime(question.questionId, question, question.deadline, (r) => check(question, r))
      return reply === undefined ? undefined : applied(question, reply)
    },
    async answer(question, { signal, rejected, durable }): Promise<Answer> {
      rejections.keep(question.questionId, rejected)
      const message: QuestionMessage = { v: PROTOCOL_VERSION, type: 'question', ...question }
      // Until answered, a withdrawal is owed when the agent stops waiting before the deadline: its
      // run was cancelled, or (a run without a store) ended. A stored run's process that stops is
      // no withdrawal: the run resumes elsewhere and asks the same question again.
      let answered = false
      const stopped = () =>
        queueMicrotask(() => {
          const withdrawal = withdrawalOnStop(signal.reason)
          if (answered) return
          // Its run goes on elsewhere (or here, after a restart): an answer to it is not late.
          if (durable && withdrawal.cancel === undefined) return requester.forget(question.questionId)
          if (clock.now() >= question.deadline) return
          publishWithdrawal(question, withdrawal)
        })
      if (signal.aborted) stopped()
      else signal.addEventListener('abort', stopped, { once: true })
      try {
        const reply = await requester.request({
          id: question.questionId,
          context: question,
          subject: subjects.ask(question.agentId),
          message,
          check: (answer) => check(question, answer),
          // A stored run's question may have been answered while no process ran: read from the start.
          ...(durable ? { replay: true } : {}),
          signal,
        })
        answered = true
        return applied(question, reply)
      } finally {
        signal.removeEventListener('abort', stopped)
      }
    },
    close() {
      requester.close(new BusClosedError('the bus answerer was closed'))
    },
  }
}
