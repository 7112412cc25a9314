import type { Answer, Answerer, Clock, Question } from '@signalbox/core'
import { type Bus, BusClosedError, createSubjects, type Subjects } from '@signalbox/core/bus'
import { AnswerMessage, PROTOCOL_VERSION, type QuestionMessage } from '@signalbox/core/protocol'
import { DurableRequester } from '../requests/durable-request.ts'
import { createRejectionReporter } from '../requests/rejections.ts'

export interface RemoteAnswererOptions {
  bus: Bus
  subjects?: Subjects
  clock?: Clock
}

export interface RemoteAnswerer extends Answerer {
  close(): void
}

/**
 * The agent's side of escalation: the question goes out durably on `ask.<agent>`, the answer
 * comes back on `ask.<agent>.answers`. Use it as the `answerer` of `askHumanTool`.
 */
export function remoteAnswerer(options: RemoteAnswererOptions): RemoteAnswerer {
  const { bus } = options
  const subjects = options.subjects ?? createSubjects()
  const report = createRejectionReporter({ bus, subjects, component: 'agent-questions', clock: options.clock })
  const requester = new DurableRequester<typeof AnswerMessage, Question>({
    bus,
    schema: AnswerMessage,
    idOf: (answer) => answer.questionId,
    replySubjectOf: (question) => subjects.answers(question.agentId),
    replyName: 'Answer',
    report,
  })
  return {
    async answer(question, { signal }): Promise<Answer> {
      const message: QuestionMessage = { v: PROTOCOL_VERSION, type: 'question', ...question }
      const {
        v: _v,
        type: _type,
        ...answer
      } = await requester.request({
        id: question.questionId,
        context: question,
        subject: subjects.ask(question.agentId),
        message,
        signal,
      })
      return answer
    },
    close() {
      requester.close(new BusClosedError('the bus answerer was closed'))
    },
  }
}
