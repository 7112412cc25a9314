import {
  type Answer,
  type Answerer,
  AnswerMessage,
  type Bus,
  BusClosedError,
  type Clock,
  createSubjects,
  encodeMessage,
  PROTOCOL_VERSION,
  ProtocolError,
  type Question,
  type QuestionMessage,
  type Subjects,
} from '@signalbox/core'
import { createRejectionReporter } from '../requests/rejections.ts'
import { DurableReplyWaiter } from '../requests/reply-waiter.ts'

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
  const report = createRejectionReporter({
    bus,
    subjects,
    component: 'agent-questions',
    ...(options.clock ? { clock: options.clock } : {}),
  })
  const waiter = new DurableReplyWaiter<typeof AnswerMessage, Question>({
    bus,
    schema: AnswerMessage,
    idOf: (answer) => answer.questionId,
    reportInvalid: report,
    onRejected: ({ reply, reason, context }) =>
      report(
        subjects.answers(context.agentId),
        JSON.stringify(reply),
        new ProtocolError('PROTOCOL_INVALID_MESSAGE', `Answer rejected: ${reason}`),
      ),
  })
  return {
    async answer(question, { signal }): Promise<Answer> {
      await waiter.listen(subjects.answers(question.agentId))
      // Aborted by the caller, or by us when the question could not be sent (nothing may wait for it then).
      const withdrawn = new AbortController()
      const answered = waiter.expect(question.questionId, question, () => undefined, AbortSignal.any([signal, withdrawn.signal]))
      answered.catch(() => {})
      const message: QuestionMessage = { v: PROTOCOL_VERSION, type: 'question', ...question }
      try {
        await bus.durablePublish(subjects.ask(question.agentId), encodeMessage(message), { msgId: question.questionId, signal })
      } catch (error) {
        withdrawn.abort(error)
        throw error
      }
      const { v: _v, type: _type, ...answer } = await answered
      return answer
    },
    close() {
      waiter.close(new BusClosedError('the bus answerer was closed'))
    },
  }
}
