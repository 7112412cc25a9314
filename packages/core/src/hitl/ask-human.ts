import { z } from 'zod/v4'
import { untilAborted } from '../abort.ts'
import { type Clock, systemClock } from '../clock.ts'
import { formatDuration } from '../duration.ts'
import { describeError, isAbortError, QuestionTimeoutError, ToolError } from '../errors.ts'
import { type Tool, tool } from '../tool.ts'
import { rejectedAnswerAudit } from './decision.ts'
import type { Answer, Answerer, AuditKind, Question } from './types.ts'

/** How long a stored run's question waits at its deadline for `Answerer.recover` before timing out. */
const RECOVER_LIMIT_MS = 10_000

export interface AskHumanOptions {
  /** Tool name the model calls. Default `ask_human`. */
  name?: string
  description?: string
  answerer: Answerer
  /** How long to wait for an answer. Default 5 minutes. */
  timeoutMs?: number
  /** What the model reads when nobody answers in time. */
  noAnswerText?: (question: string, timeoutMs: number) => string
  clock?: Clock
}

/**
 * Escalation: a tool the model calls when it is unsure; it waits for a person's answer.
 * No answer in time is a clear result for the model, not a crash.
 */
export function askHumanTool(options: AskHumanOptions): Tool<{ question: string }> {
  const timeoutMs = options.timeoutMs ?? 5 * 60_000
  const noAnswer =
    options.noAnswerText ??
    ((question: string, ms: number) =>
      `No answer from the person within ${formatDuration(ms)} to: "${question}". Do not guess: stop and say what you need, or choose a safe action.`)
  return tool({
    name: options.name ?? 'ask_human',
    description: options.description ?? 'Ask the person a question when you are not sure what they want. Waits for their answer.',
    schema: z.object({ question: z.string().min(1).describe('The question, in plain words.') }),
    execute: async ({ question: text }, context) => {
      const clock = options.clock ?? context.clock ?? systemClock
      // A stored run resumed after a crash re-attaches to the question it had asked: same id, same deadline.
      const durable = context.durableQuestion
      const resumed = durable?.question
      const now = clock.now()
      const asked: Question = resumed ?? {
        questionId: context.ids('question'),
        agentId: context.agentId,
        runId: context.runId,
        runPath: context.runPath,
        ...(context.agentPath && context.agentPath.length > 0 ? { agentPath: context.agentPath } : {}),
        callId: context.callId,
        question: text,
        deadline: now + timeoutMs,
        askedAt: now,
      }
      const { question, askedAt } = asked
      const waitMs = asked.deadline - askedAt
      // Stored before anyone sees it: an answer can then never come for a question nobody would resume.
      // (Only awaited with a store: without one, nothing is written and the question goes out at once.)
      if (durable !== undefined && resumed === undefined) await durable.asking(asked)
      /** Who answered what, when, to exactly which question. */
      const audit = (kind: AuditKind, decision: string, actor: string, decidedAt: number) =>
        context.audit.record({
          kind,
          agentId: context.agentId,
          runId: context.runId,
          runPath: context.runPath,
          callId: context.callId,
          toolName: options.name ?? 'ask_human',
          shown: question,
          decision,
          actor,
          requestedAt: askedAt,
          decidedAt,
          latencyMs: decidedAt - askedAt,
        })
      // An answer the answerer refused (forged, for another question, late): audited, never read by the model.
      const rejected = (answer: unknown, reason: string, actor?: string) => {
        const entry = rejectedAnswerAudit({
          question: asked,
          answer,
          reason,
          at: clock.now(),
          toolName: options.name ?? 'ask_human',
          actor,
        })
        try {
          Promise.resolve(context.audit.record(entry)).catch(() => {})
        } catch {
          // A failing audit log must not reach the answerer.
        }
      }
      const answered = async (answer: Answer) => {
        const latencyMs = answer.answeredAt - askedAt
        context.emit({
          type: 'question.answered',
          question: asked,
          answer: answer.answer,
          answeredBy: answer.answeredBy,
          latencyMs,
        })
        await audit('question.answered', answer.answer, answer.answeredBy, answer.answeredAt)
        return answer.answer
      }
      const timeout = async () => {
        context.emit({ type: 'question.timeout', question: asked })
        await audit('question.timeout', 'timeout', 'system', clock.now())
        return noAnswer(question, waitMs)
      }
      // At the deadline of a stored run's question, an answer the store holds from before the
      // deadline (by its clock) still counts: one given while no process ran, or still in flight.
      const timeoutOrRecovered = async () => {
        const recover = durable ? options.answerer.recover?.bind(options.answerer) : undefined
        if (recover === undefined) return timeout()
        // Bounded: an answerer that cannot look (a lost connection) must not hold the run.
        const limit = new AbortController()
        const timer = clock.setTimeout(() => limit.abort(), RECOVER_LIMIT_MS)
        const signal = AbortSignal.any([context.signal, limit.signal])
        try {
          const recovered = await untilAborted(recover(asked, { signal, rejected, durable: true }), signal).catch(() => undefined)
          if (context.signal.aborted) throw context.signal.reason
          return recovered ? answered(recovered) : timeout()
        } finally {
          clock.clearTimeout(timer)
        }
      }
      // Resumed after the deadline: the question is not asked again.
      if (resumed !== undefined && asked.deadline <= clock.now()) return timeoutOrRecovered()
      context.emit({ type: 'question.asked', question: asked })
      const controller = new AbortController()
      const onAbort = () => controller.abort(context.signal.reason)
      context.signal.addEventListener('abort', onAbort, { once: true })
      let timedOut = false
      const timer = clock.setTimeout(() => {
        timedOut = true
        controller.abort()
      }, asked.deadline - clock.now())
      try {
        // The deadline holds even for an answerer that ignores its signal.
        const answer = await untilAborted(
          options.answerer.answer(asked, { signal: controller.signal, rejected, ...(durable ? { durable: true } : {}) }),
          controller.signal,
          'The question',
        )
        if (timedOut) throw new QuestionTimeoutError(waitMs)
        return await answered(answer)
      } catch (error) {
        if (timedOut) return timeoutOrRecovered()
        if (isAbortError(error) || context.signal.aborted) throw error
        throw new ToolError('QUESTION_FAILED', `Could not ask the person: ${describeError(error)}`, { cause: error })
      } finally {
        clock.clearTimeout(timer)
        context.signal.removeEventListener('abort', onAbort)
      }
    },
  })
}
