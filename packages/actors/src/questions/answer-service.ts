import type { Answer, Answerer, Question } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { openMessage } from '@signalbox/core/internal'
import { AnswerMessage, PROTOCOL_VERSION, QuestionMessage, QuestionWithdrawnMessage } from '@signalbox/core/protocol'
import { createRejectionReporter } from '../requests/rejections.ts'
import { type RequestService, serveDurableRequests } from '../requests/request-service.ts'
import { publishSignedReply, type ReplyServiceOptions, signedReply } from '../requests/signed-replies.ts'
import type { TrustPolicy } from '../trust/policy.ts'

export interface AnswerServiceOptions extends ReplyServiceOptions {
  /** Who answers: `terminalAnswerer()`, `functionAnswerer(...)`, or your own. */
  answerer: Answerer
  /**
   * Whose answers (`answerers`) count as answering a question elsewhere: anyone can publish an
   * answer quoting a question they read, and without this an unsigned one would make this service
   * drop the question (the agent then refuses that answer and nobody answers). A policy without
   * `answerers` lets no answer count: each question is answered here. Without one, any answer counts.
   */
  trust?: TrustPolicy
  onQuestion?(question: Question): void
  onAnswer?(question: Question, answer: Answer): void
  onSettled?(questionId: string, answer: Answer): void
  /**
   * The agent withdrew a question (its run was cancelled or ended): it is no longer asked here, and
   * an answer to it would be refused. With a policy that names `agents`, only a withdrawal signed by
   * the agent's key counts.
   */
  onWithdrawn?(questionId: string, withdrawal: { reason: string; by?: string; withdrawnAt: number }): void
}

/** A person (or a program) answering the agents' questions from `ask.<agent>`. */
export function serveAnswerer(options: AnswerServiceOptions): RequestService {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const report = createRejectionReporter({ bus, subjects, component: 'answerer', clock: options.clock })
  return serveDurableRequests({
    bus,
    subject: subjects.ask(options.agentId),
    schema: QuestionMessage,
    idOf: (question) => question.questionId,
    deadlineOf: (question) => question.deadline,
    mode: options.mode ?? 'broadcast',
    group: options.group ?? 'answerers',
    privatePurpose: 'questions',
    report,
    settlements: {
      subject: subjects.answers(options.agentId),
      schema: AnswerMessage,
      idOf: (answer) => answer.questionId,
      purpose: 'answered',
      // Answers name no agent or call: who signed is all there is to check, request or not.
      trusted: (answer) => options.trust === undefined || options.trust.check(answer).ok,
      onSettled: (id, message) =>
        options.onSettled?.(id, signedReply(message, { trust: options.trust, nameField: 'answeredBy' })),
    },
    withdrawals: {
      subject: subjects.questionWithdrawals(options.agentId),
      schema: QuestionWithdrawnMessage,
      idOf: (withdrawal) => withdrawal.questionId,
      purpose: 'unasked',
      withdrawal: 'withdrawn',
      // Anyone allowed to publish here is an agent (permissions); with the agents' keys, only theirs count.
      trusted: (withdrawal) =>
        options.trust?.options.agents === undefined || options.trust.check(withdrawal, { agentId: withdrawal.agentId }).ok,
      matches: (question, withdrawal) => {
        const message = question as QuestionMessage
        return message.agentId === withdrawal.agentId && message.callId === withdrawal.callId
      },
      onSettled: (id, { reason, by, withdrawnAt }) =>
        options.onWithdrawn?.(id, { reason, ...(by !== undefined ? { by } : {}), withdrawnAt }),
    },
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.onError ? { onError: options.onError } : {}),
    decide: async (message, signal) => {
      const question = openMessage(message).body
      options.onQuestion?.(question)
      const answer = await options.answerer.answer(question, { signal })
      return { question, answer }
    },
    publish: async (_message, { question, answer }, signal) => {
      const message: AnswerMessage = {
        v: PROTOCOL_VERSION,
        type: 'answer',
        questionId: question.questionId,
        answer: answer.answer,
        answeredBy: answer.answeredBy,
        answeredAt: answer.answeredAt,
      }
      const subject = subjects.answers(question.agentId)
      const { signer } = options
      await publishSignedReply(bus, { subject, message, signer, idPrefix: 'answer', requestId: question.questionId }, signal)
      options.onAnswer?.(question, answer)
    },
  })
}
