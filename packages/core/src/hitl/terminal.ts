import { createInterface } from 'node:readline/promises'
import type { Readable, Writable } from 'node:stream'
import { type Clock, systemClock } from '../clock.ts'
import { AbortedError } from '../errors.ts'
import { decideApproval } from './decision.ts'
import type { Answerer, Reviewer } from './types.ts'

export interface TerminalOptions {
  input?: Readable
  output?: Writable
  /** Who is typing, for the audit. Default: `$USER` or `terminal`. */
  name?: string
  clock?: Clock
}

/**
 * Asks in a terminal. One prompt at a time: concurrent requests wait their turn so two
 * questions never interleave on the screen.
 */
export function terminalReviewer(options: TerminalOptions = {}): Reviewer {
  const ask = createAsker(options)
  const clock = options.clock ?? systemClock
  const name = options.name ?? process.env.USER ?? 'terminal'
  return {
    async review(request, { signal }) {
      const seconds = Math.max(0, Math.round((request.deadline - clock.now()) / 1000))
      const shown = `\nApprove ${request.toolName}(${JSON.stringify(request.arguments)})?\n  agent ${request.agentId}, run ${request.runId}, call ${request.callId}, ${seconds}s to decide\n[y/N] `
      const answer = (await ask(shown, signal)).trim().toLowerCase()
      const approved = answer === 'y' || answer === 'yes'
      let reason: string | undefined
      if (!approved) reason = (await ask('Reason (the model reads it): ', signal)).trim() || undefined
      return decideApproval(request, { approved, reason }, name, clock.now())
    },
  }
}

export function terminalAnswerer(options: TerminalOptions = {}): Answerer {
  const ask = createAsker(options)
  const clock = options.clock ?? systemClock
  const name = options.name ?? process.env.USER ?? 'terminal'
  return {
    async answer(question, { signal }) {
      const text = await ask(`\nThe agent asks: ${question.question}\n> `, signal)
      return { questionId: question.questionId, answer: text.trim(), answeredBy: name, answeredAt: clock.now() }
    },
  }
}

function createAsker(options: TerminalOptions) {
  let queue: Promise<unknown> = Promise.resolve()
  return (prompt: string, signal: AbortSignal): Promise<string> => {
    const next = queue.then(async () => {
      const rl = createInterface({ input: options.input ?? process.stdin, output: options.output ?? process.stdout })
      // readline never settles a question when its input ends: treat the end as "no answer".
      const closed = new Promise<never>((_, reject) =>
        rl.once('close', () => reject(new AbortedError('The terminal input ended before an answer.'))),
      )
      closed.catch(() => {})
      try {
        return await Promise.race([rl.question(prompt, { signal }), closed])
      } finally {
        rl.close()
      }
    })
    queue = next.catch(() => {})
    return next
  }
}
