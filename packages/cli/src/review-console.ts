/**
 * The person at the terminal as a `Reviewer` and an `Answerer`: each approval request is shown
 * with the exact call (agent, run, tool, arguments pretty-printed, digest, time left), then
 * y/n and, on no, a reason the model reads. Questions get a free-text answer. With `auto`, the
 * same screens are printed and answered without typing (for demos and unattended runs).
 */

import { withdrawalOf } from '@signalbox/actors'
import type { Answer, Answerer, ApprovalDecision, ApprovalRequest, Question, Reviewer } from '@signalbox/core'
import { AbortedError, decideApproval } from '@signalbox/core'
import { type Colors, clockTime, formatElapsed, quote } from './output.ts'
import type { Prompter } from './prompter.ts'

export type AutoVerdict = 'approve' | 'deny'

export interface ConsoleOutput {
  /** A human-readable line. */
  line(text: string): void
  /** A machine-readable record (with `--json`); `undefined` when the output is for people. */
  json?: (record: Record<string, unknown>) => void
}

export interface ReviewConsoleOptions {
  c: Colors
  out: ConsoleOutput
  /** Who decides (recorded in the audit). */
  name: string
  /** Needed unless both `auto` and `autoAnswer` are set. */
  prompter?: Prompter
  auto?: AutoVerdict
  /** Answer every question with this text instead of asking. */
  autoAnswer?: string
  /** Print each decision as soon as it is made (when no service reports it afterwards). */
  announce?: boolean
  /** Who sent a request, as far as its signature tells (`signalbox review --agent-key`). */
  originOf?: (requestId: string) => { verified: boolean; name?: string; signer?: string; reason?: string } | undefined
  clock?: () => number
}

export interface ReviewConsole {
  reviewer: Reviewer
  answerer: Answerer
  /** Prints a decision (this console's or another reviewer's). */
  decided(
    request: Pick<ApprovalRequest, 'toolName' | 'callId' | 'agentId' | 'runId' | 'requestedAt'> | undefined,
    decision: ApprovalDecision,
    options?: { elsewhere?: boolean },
  ): void
  answered(question: Question | undefined, answer: Answer, options?: { elsewhere?: boolean }): void
  /** Prints that the agent withdrew a request (a correction cancelled the call): nobody decides it any more. */
  withdrawnByAgent(request: ApprovalRequest, withdrawal: { reason: string; by?: string }): void
  /** Prints that the agent withdrew a question (its run was cancelled): nobody answers it any more. */
  questionWithdrawnByAgent(question: Question, withdrawal: { reason: string; by?: string }): void
}

const AUTO_DENY_REASON = 'denied automatically by the reviewer (--auto deny)'

export function createReviewConsole(options: ReviewConsoleOptions): ReviewConsole {
  const { c, out, name } = options
  const now = options.clock ?? Date.now
  const print = (text: string) => (options.prompter ? options.prompter.print(text) : out.line(text))
  const emit = (record: Record<string, unknown>, text: string) => {
    if (out.json) out.json(record)
    else print(text)
  }

  const timeLeft = (deadline: number) => {
    const left = deadline - now()
    return left <= 0 ? c.red('expired') : `${formatElapsed(left)} (until ${clockTime(deadline)})`
  }

  const shortTimeLeft = (deadline: number) => {
    const left = deadline - now()
    return left <= 0 ? 'expired' : `${formatElapsed(left)} left`
  }

  function requestBlock(request: ApprovalRequest): string {
    const bar = c.yellow('│')
    const row = (label: string, value: string) => `${bar} ${c.dim(label.padEnd(10))} ${value}`
    const args = JSON.stringify(request.arguments, null, 2) ?? 'undefined'
    const [first, ...rest] = args.split('\n')
    const lines = [
      '',
      `${c.yellow('┌')} ${c.bold(c.yellow('approval requested'))} ${c.dim(clockTime(request.requestedAt))}`,
      row('agent', c.magenta(request.agentId)),
      row('run', request.runId),
      row('call', request.callId),
      row('tool', c.bold(request.toolName)),
      ...(request.description ? [row('about', c.dim(quote(request.description, 200)))] : []),
      row('arguments', first ?? ''),
      ...rest.map((line) => `${bar} ${' '.repeat(10)} ${line}`),
      // Why it is asked: what the run was asked, what the model said before the call.
      ...(request.context?.input ? [row('asked', quote(request.context.input, 200))] : []),
      ...(request.context?.lastText ? [row('model said', quote(request.context.lastText, 200))] : []),
      row('digest', c.dim(request.digest)),
      row('time left', timeLeft(request.deadline)),
      ...originRow(request.requestId, row),
    ]
    return lines.join('\n')
  }

  function originRow(requestId: string, row: (label: string, value: string) => string): string[] {
    const origin = options.originOf?.(requestId)
    if (origin === undefined) return []
    return [
      row(
        'sender',
        origin.verified
          ? c.green(`verified: signed by ${origin.name} (${origin.signer})`)
          : c.red(`NOT verified: ${origin.reason ?? 'unsigned'}`),
      ),
    ]
  }

  const describeCall = (request: Pick<ApprovalRequest, 'toolName' | 'callId' | 'agentId' | 'runId'>) =>
    `${c.bold(request.toolName)} ${c.dim(`(${request.callId}, agent ${request.agentId}, run ${request.runId})`)}`

  /** Why a prompt went away before anyone decided, on the screen. */
  function withdrawn(request: ApprovalRequest, signal: AbortSignal): void {
    const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? '')
    // Reported by `decided(..., { elsewhere: true })`, or by `withdrawnByAgent`.
    const withdrawal = withdrawalOf(signal.reason)
    if (withdrawal === 'settled-elsewhere' || withdrawal === 'withdrawn' || /settled elsewhere/.test(reason)) return
    if (now() >= request.deadline - 100 || /expired/.test(reason)) {
      emit(
        {
          type: 'approval.timeout',
          requestId: request.requestId,
          agentId: request.agentId,
          runId: request.runId,
          callId: request.callId,
          toolName: request.toolName,
        },
        `${c.red('⏱ timed out')}: ${describeCall(request)}: nobody decided by the deadline, so the agent denies it by default`,
      )
      return
    }
    emit(
      { type: 'approval.withdrawn', requestId: request.requestId, reason },
      `${c.yellow('↩ withdrawn')}: ${describeCall(request)}${reason ? `: ${reason}` : ''}`,
    )
  }

  const reviewer: Reviewer = {
    async review(request, { signal }) {
      const decide = (approved: boolean, reason: string | undefined): ApprovalDecision =>
        decideApproval(request, { approved, reason }, name, now())
      let decision: ApprovalDecision
      if (options.auto) {
        emit({ type: 'approval.request', request }, requestBlock(request))
        decision = options.auto === 'approve' ? decide(true, undefined) : decide(false, AUTO_DENY_REASON)
      } else {
        const prompter = options.prompter
        if (!prompter) throw new AbortedError('no terminal to ask on')
        try {
          decision = await prompter.session(signal, async (ask) => {
            prompter.print(requestBlock(request))
            let approved: boolean | undefined
            while (approved === undefined) {
              // The time left counts down in the prompt while the person decides.
              const question = () =>
                `${c.yellow('└')} ${c.dim(`${shortTimeLeft(request.deadline)} ·`)} ${c.bold(`Approve ${request.toolName}?`)} [y/n] `
              const answer = (await ask(question)).trim().toLowerCase()
              if (answer === 'y' || answer === 'yes') approved = true
              else if (answer === 'n' || answer === 'no') approved = false
              else prompter.print(c.dim('  Type y (run it) or n (deny it), then Enter.'))
            }
            let reason: string | undefined
            if (!approved) reason = (await ask(`  ${c.bold('Reason')} ${c.dim('(the model reads it)')}: `)).trim() || undefined
            return decide(approved, reason)
          })
        } catch (error) {
          if (signal.aborted) withdrawn(request, signal)
          throw error
        }
      }
      if (options.announce) reviewerConsole.decided(request, decision)
      return decision
    },
  }

  function questionBlock(question: Question): string {
    const bar = c.cyan('│')
    return [
      '',
      `${c.cyan('┌')} ${c.bold(c.cyan('question'))} ${c.dim(clockTime(question.askedAt))} ${c.dim(`from ${question.agentId}, run ${question.runId}`)}`,
      ...question.question.split('\n').map((line) => `${bar} ${c.bold(line)}`),
      `${bar} ${c.dim('time left')} ${timeLeft(question.deadline)}`,
    ].join('\n')
  }

  const answerer: Answerer = {
    async answer(question, { signal }) {
      const reply = (text: string): Answer => ({
        questionId: question.questionId,
        answer: text,
        answeredBy: name,
        answeredAt: now(),
      })
      let answer: Answer
      if (options.autoAnswer !== undefined) {
        emit({ type: 'question', question }, questionBlock(question))
        answer = reply(options.autoAnswer)
      } else {
        const prompter = options.prompter
        if (!prompter) throw new AbortedError('no terminal to ask on')
        try {
          answer = await prompter.session(signal, async (ask) => {
            prompter.print(questionBlock(question))
            for (;;) {
              const text = (await ask(`${c.cyan('└')} ${c.bold('Answer')}: `)).trim()
              if (text) return reply(text)
              prompter.print(c.dim('  Type an answer for the agent, then Enter.'))
            }
          })
        } catch (error) {
          if (signal.aborted) {
            const reason = signal.reason instanceof Error ? signal.reason.message : ''
            // Answered elsewhere, or withdrawn by the agent: reported by `answered` / `questionWithdrawnByAgent`.
            const withdrawal = withdrawalOf(signal.reason)
            if (withdrawal !== 'settled-elsewhere' && withdrawal !== 'withdrawn' && !/settled elsewhere/.test(reason)) {
              emit(
                { type: 'question.timeout', questionId: question.questionId, agentId: question.agentId },
                `${c.red('⏱ no answer')}: ${quote(question.question, 80)} ${c.dim(`(${question.agentId}): the agent is told nobody answered`)}`,
              )
            }
          }
          throw error
        }
      }
      if (options.announce) reviewerConsole.answered(question, answer)
      return answer
    },
  }

  const reviewerConsole: ReviewConsole = {
    reviewer,
    answerer,
    decided(request, decision, extra = {}) {
      const verdict = decision.approved ? c.green('✔ approved') : c.red('✘ denied')
      const what = request ? describeCall(request) : c.dim(`(call ${decision.callId})`)
      const latency = request ? ` · ${formatElapsed(decision.decidedAt - request.requestedAt)}` : ''
      const by = extra.elsewhere
        ? `by ${c.bold(decision.reviewer)} ${c.dim('(another reviewer)')}`
        : `by ${c.bold(decision.reviewer)}`
      const reason = decision.reason ? `: ${quote(decision.reason)}` : ''
      emit(
        {
          type: 'approval.decision',
          elsewhere: extra.elsewhere === true,
          ...(request ? { toolName: request.toolName, agentId: request.agentId, runId: request.runId } : {}),
          decision,
        },
        `${verdict} ${what} ${by}${reason}${latency}`,
      )
    },
    withdrawnByAgent(request, { reason, by }) {
      emit(
        { type: 'approval.withdrawn', requestId: request.requestId, reason, ...(by !== undefined ? { by } : {}) },
        `${c.yellow('↩ withdrawn')}${by !== undefined ? ` by ${c.bold(by)}` : ''}: ${describeCall(request)}: ${reason}`,
      )
    },
    questionWithdrawnByAgent(question, { reason, by }) {
      emit(
        { type: 'question.withdrawn', questionId: question.questionId, reason, ...(by !== undefined ? { by } : {}) },
        `${c.yellow('↩ withdrawn')}${by !== undefined ? ` by ${c.bold(by)}` : ''}: ${quote(question.question, 60)} ${c.dim(`(${question.agentId})`)}: ${reason}`,
      )
    },
    answered(question, answer, extra = {}) {
      const what = question ? quote(question.question, 60) : c.dim(`(question ${answer.questionId})`)
      const by = extra.elsewhere ? `${c.bold(answer.answeredBy)} ${c.dim('(someone else)')}` : c.bold(answer.answeredBy)
      emit(
        {
          type: 'question.answer',
          elsewhere: extra.elsewhere === true,
          ...(question ? { question: question.question, agentId: question.agentId } : {}),
          answer,
        },
        `${c.green('✔ answered')} ${what} by ${by}: ${quote(answer.answer)}`,
      )
    },
  }
  return reviewerConsole
}
