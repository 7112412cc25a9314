import { z } from 'zod/v4'
import { untilAborted } from '../abort.ts'
import { type Clock, systemClock } from '../clock.ts'
import { formatDuration } from '../duration.ts'
import { describeError, isAbortError, QuestionTimeoutError, ToolError } from '../errors.ts'
import { type Tool, type ToolContext, tool } from '../tool.ts'
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
  const name = options.name ?? 'ask_human'
  const noAnswer =
    options.noAnswerText ??
    ((question: string, ms: number) =>
      `No answer from the person within ${formatDuration(ms)} to: "${question}". Do not guess: stop and say what you need, or choose a safe action.`)
  return tool({
    name,
    description: options.description ?? 'Ask the person a question when you are not sure what they want. Waits for their answer.',
    schema: z.object({ question: z.string().min(1).describe('The question, in plain words.') }),
    execute: async ({ question }, context) => {
      const outcome = await askPerson(context, question, {
        answerer: options.answerer,
        timeoutMs,
        toolName: name,
        durable: true,
        ...(options.clock ? { clock: options.clock } : {}),
      })
      return outcome.answered ? outcome.answer.answer : noAnswer(outcome.question.question, outcome.waitedMs)
    },
  })
}

export interface AskPersonOptions {
  answerer: Answerer
  /** How long the person has, from the first asking. */
  timeoutMs: number
  /** The tool that asks, as the audit names it. */
  toolName: string
  clock?: Clock
  /**
   * JSON Schema of the answer (the answer text is that value as JSON), carried by the question for
   * answerers that can show a form.
   */
  answerSchema?: Record<string, unknown>
  /**
   * Checks an answer: a problem (its text) rejects it, recorded as `question.rejected`, and the
   * person is asked again, told why, until the same deadline.
   */
  check?: (answer: string) => string | undefined
  /**
   * Keep the question with a stored run (`ToolContext.durableQuestion`): a run resumed after a crash
   * re-attaches to it, same id and deadline. For a question that outlives its call only (`ask_human`).
   */
  durable?: boolean
}

export type AskOutcome =
  | { answered: true; answer: Answer; question: Question }
  | { answered: false; question: Question; waitedMs: number }

/**
 * Asks a person from inside a tool call and waits for the answer, the way `ask_human` does: the
 * question goes to the answerer with a deadline, `question.asked` / `question.answered` /
 * `question.timeout` events are emitted and every outcome is audited. No answer by the deadline
 * resolves `{ answered: false }`; a failure to ask at all is a `ToolError` (`QUESTION_FAILED`).
 */
export async function askPerson(context: ToolContext, text: string, options: AskPersonOptions): Promise<AskOutcome> {
  const clock = options.clock ?? context.clock ?? systemClock
  // A stored run resumed after a crash re-attaches to the question it had asked: same id, same deadline.
  const durable = options.durable ? context.durableQuestion : undefined
  const resumed = durable?.question
  const now = clock.now()
  const ask = (question: string, deadline: number): Question => ({
    questionId: context.ids('question'),
    agentId: context.agentId,
    runId: context.runId,
    runPath: context.runPath,
    ...(context.agentPath && context.agentPath.length > 0 ? { agentPath: context.agentPath } : {}),
    callId: context.callId,
    question,
    ...(options.answerSchema ? { answerSchema: options.answerSchema } : {}),
    deadline,
    askedAt: clock.now(),
  })
  let asked: Question = resumed ?? ask(text, now + options.timeoutMs)
  const firstAskedAt = asked.askedAt
  // Stored before anyone sees it: an answer can then never come for a question nobody would resume.
  // (Only awaited with a store: without one, nothing is written and the question goes out at once.)
  if (durable !== undefined && resumed === undefined) await durable.asking(asked)
  for (;;) {
    const outcome = await askOnce(context, asked, options, clock, durable !== undefined, resumed === asked)
    if (!outcome.answered) return { answered: false, question: asked, waitedMs: asked.deadline - firstAskedAt }
    const problem = options.check?.(outcome.answer.answer)
    if (problem === undefined) {
      await answeredIn(context, asked, outcome.answer, options.toolName)
      return { answered: true, answer: outcome.answer, question: asked }
    }
    recordQuietly(
      context,
      rejectedAnswerAudit({
        question: asked,
        answer: outcome.answer,
        reason: problem,
        at: clock.now(),
        toolName: options.toolName,
      }),
    )
    if (asked.deadline <= clock.now()) {
      await timedOut(context, asked, options.toolName, clock)
      return { answered: false, question: asked, waitedMs: asked.deadline - firstAskedAt }
    }
    asked = ask(
      `${text}\n\n(The answer "${clip(outcome.answer.answer)}" was not accepted: ${problem}. Please answer again.)`,
      asked.deadline,
    )
  }
}

/** Asks `asked` once: the answer the answerer gave by the deadline (not yet checked nor audited), or none. */
async function askOnce(
  context: ToolContext,
  asked: Question,
  options: AskPersonOptions,
  clock: Clock,
  durable: boolean,
  resumed: boolean,
): Promise<{ answered: true; answer: Answer } | { answered: false }> {
  const { answerer, toolName } = options
  // An answer the answerer refused (forged, for another question, late): audited, never read by the model.
  const rejected = (answer: unknown, reason: string, actor?: string) =>
    recordQuietly(context, rejectedAnswerAudit({ question: asked, answer, reason, at: clock.now(), toolName, actor }))
  // At the deadline of a stored run's question, an answer the store holds from before the
  // deadline (by its clock) still counts: one given while no process ran, or still in flight.
  const timeoutOrRecovered = async (): Promise<{ answered: true; answer: Answer } | { answered: false }> => {
    const recover = durable ? answerer.recover?.bind(answerer) : undefined
    if (recover !== undefined) {
      // Bounded: an answerer that cannot look (a lost connection) must not hold the run.
      const limit = new AbortController()
      const timer = clock.setTimeout(() => limit.abort(), RECOVER_LIMIT_MS)
      const signal = AbortSignal.any([context.signal, limit.signal])
      try {
        const recovered = await untilAborted(recover(asked, { signal, rejected, durable: true }), signal).catch(() => undefined)
        if (context.signal.aborted) throw context.signal.reason
        if (recovered) return { answered: true, answer: recovered }
      } finally {
        clock.clearTimeout(timer)
      }
    }
    await timedOut(context, asked, toolName, clock)
    return { answered: false }
  }
  // Resumed after the deadline: the question is not asked again.
  if (resumed && asked.deadline <= clock.now()) return timeoutOrRecovered()
  context.emit({ type: 'question.asked', question: asked })
  const controller = new AbortController()
  const onAbort = () => controller.abort(context.signal.reason)
  context.signal.addEventListener('abort', onAbort, { once: true })
  let expired = false
  const timer = clock.setTimeout(() => {
    expired = true
    controller.abort()
  }, asked.deadline - clock.now())
  try {
    // The deadline holds even for an answerer that ignores its signal.
    const answer = await untilAborted(
      answerer.answer(asked, { signal: controller.signal, rejected, ...(durable ? { durable: true } : {}) }),
      controller.signal,
      'The question',
    )
    if (expired) throw new QuestionTimeoutError(asked.deadline - asked.askedAt)
    return { answered: true, answer }
  } catch (error) {
    if (expired) return timeoutOrRecovered()
    if (isAbortError(error) || context.signal.aborted) throw error
    throw new ToolError('QUESTION_FAILED', `Could not ask the person: ${describeError(error)}`, { cause: error })
  } finally {
    clock.clearTimeout(timer)
    context.signal.removeEventListener('abort', onAbort)
  }
}

async function answeredIn(context: ToolContext, asked: Question, answer: Answer, toolName: string): Promise<void> {
  context.emit({
    type: 'question.answered',
    question: asked,
    answer: answer.answer,
    answeredBy: answer.answeredBy,
    latencyMs: answer.answeredAt - asked.askedAt,
  })
  await audit(context, asked, toolName, 'question.answered', answer.answer, answer.answeredBy, answer.answeredAt)
}

async function timedOut(context: ToolContext, asked: Question, toolName: string, clock: Clock): Promise<void> {
  context.emit({ type: 'question.timeout', question: asked })
  await audit(context, asked, toolName, 'question.timeout', 'timeout', 'system', clock.now())
}

/** Who answered what, when, to exactly which question. */
function audit(
  context: ToolContext,
  asked: Question,
  toolName: string,
  kind: AuditKind,
  decision: string,
  actor: string,
  decidedAt: number,
) {
  return context.audit.record({
    kind,
    agentId: context.agentId,
    runId: context.runId,
    runPath: context.runPath,
    callId: context.callId,
    toolName,
    shown: asked.question,
    decision,
    actor,
    requestedAt: asked.askedAt,
    decidedAt,
    latencyMs: decidedAt - asked.askedAt,
  })
}

/** A failing audit log must not reach the answerer (nor the person's next try). */
function recordQuietly(context: ToolContext, entry: Parameters<ToolContext['audit']['record']>[0]): void {
  try {
    Promise.resolve(context.audit.record(entry)).catch(() => {})
  } catch {
    // nothing to tell
  }
}

const clip = (text: string) => (text.length > 200 ? `${text.slice(0, 197)}...` : text)
