import { randomBytes } from 'node:crypto'
import type { Answer, Answerer, Clock, Question } from '@signalbox/core'
import { type Bus, createSubjects, type Subjects } from '@signalbox/core/bus'
import { AnswerMessage, encodeMessage, PROTOCOL_VERSION, QuestionMessage } from '@signalbox/core/protocol'
import { DecisionNotStoredError } from '../approvals/reviewer-service.ts'
import { createRejectionReporter, msgIdPart } from '../requests/rejections.ts'
import { type RequestService, type ServiceMode, serveDurableRequests } from '../requests/request-service.ts'
import type { TrustPolicy } from '../trust/policy.ts'
import type { Signer } from '../trust/sign.ts'

export interface AnswerServiceOptions {
  bus: Bus
  /** Who answers: `terminalAnswerer()`, `functionAnswerer(...)`, or your own. */
  answerer: Answerer
  subjects?: Subjects
  agentId?: string
  /** `broadcast` (default): everyone watching sees the question; the first answer counts. */
  mode?: ServiceMode
  group?: string
  /** The answerer's key: every answer is signed with it (agents with a trust policy accept nothing else). */
  signer?: Signer
  /**
   * Whose answers (`answerers`) count as answering a question elsewhere: anyone can publish an
   * answer quoting a question they read, and without this an unsigned one would make this service
   * drop the question (the agent then refuses that answer and nobody answers). A policy without
   * `answerers` lets no answer count: each question is answered here. Without one, any answer counts.
   */
  trust?: TrustPolicy
  clock?: Clock
  onQuestion?(question: Question): void
  onAnswer?(question: Question, answer: Answer): void
  onSettled?(questionId: string, answer: Answer): void
  onError?(error: unknown): void
}

/** A person (or a program) answering the agents' questions from `ask.<agent>`. */
export function serveAnswerer(options: AnswerServiceOptions): RequestService {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const report = createRejectionReporter({ bus, subjects, component: 'answerer', clock: options.clock })
  const scope = options.agentId === undefined ? {} : { agent: options.agentId }
  return serveDurableRequests({
    bus,
    subject: subjects.pattern('ask', scope),
    schema: QuestionMessage,
    idOf: (question) => question.questionId,
    deadlineOf: (question) => question.deadline,
    mode: options.mode ?? 'broadcast',
    group: options.group ?? 'answerers',
    privatePurpose: 'questions',
    report,
    settlements: {
      subject: subjects.pattern('answers', scope),
      schema: AnswerMessage,
      idOf: (answer) => answer.questionId,
      purpose: 'answered',
      // Answers name no agent or call: who signed is all there is to check, request or not.
      trusted: (answer) => options.trust === undefined || options.trust.check(answer).ok,
      onSettled: (id, { v: _v, type: _type, signer, signature: _sig, ...answer }) => {
        // Shown under the policy's name for the key that signed, never the name the message claims.
        const named = signer !== undefined ? options.trust?.nameOf(signer) : undefined
        options.onSettled?.(id, named === undefined ? answer : { ...answer, answeredBy: named })
      },
    },
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
    decide: async (message, signal) => {
      const { v: _v, type: _type, ...question } = message
      options.onQuestion?.(question)
      const answer = await options.answerer.answer(question, { signal })
      return { question, answer }
    },
    publish: async (_message, { question, answer }, signal) => {
      const unsigned: AnswerMessage = {
        v: PROTOCOL_VERSION,
        type: 'answer',
        questionId: question.questionId,
        answer: answer.answer,
        answeredBy: answer.answeredBy,
        answeredAt: answer.answeredAt,
      }
      const reply = options.signer ? options.signer.sign(unsigned) : unsigned
      // Unguessable, so nobody can take the id first; a duplicate then means it was not stored by us.
      const stored = await bus.durablePublish(subjects.answers(question.agentId), encodeMessage(reply), {
        msgId: msgIdPart(`answer-${question.questionId}-${randomBytes(12).toString('hex')}`),
        signal,
      })
      if (stored.duplicate) throw new DecisionNotStoredError(question.questionId)
      options.onAnswer?.(question, answer)
    },
  })
}
