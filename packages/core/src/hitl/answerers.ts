import type { Clock } from '../clock.ts'
import { systemClock } from '../clock.ts'
import { AbortedError, ConfigError } from '../errors.ts'
import type { Answer, Answerer, Question } from './types.ts'

/**
 * An answerer that is a function.
 *
 * @param fn Gets the `Question` (`question` is the text; also `questionId`, `agentId`, `runId`,
 *   `runPath`, `callId`, `deadline`, `askedAt`) and a `signal` that aborts when the question times
 *   out or the run is cancelled; returns the answer text (or a promise of it).
 * @param options `name`: recorded as `answeredBy` (default `function`); `clock`: stamps `answeredAt`.
 * @returns An `Answerer` whose answers are `{ questionId, answer, answeredBy, answeredAt }`.
 *
 * @example
 * ```ts
 * const answerer = functionAnswerer(({ question }) => (question.includes('bear') ? 'The polar bear!' : 'No idea.'))
 * ```
 */
export function functionAnswerer(
  fn: (question: Question, options: { signal: AbortSignal }) => string | Promise<string>,
  options: { name?: string; clock?: Clock } = {},
): Answerer {
  const clock = options.clock ?? systemClock
  return {
    async answer(question, { signal }) {
      const text = await fn(question, { signal })
      return { questionId: question.questionId, answer: text, answeredBy: options.name ?? 'function', answeredAt: clock.now() }
    },
  }
}

/** For tests: answers from a list, in order (`'never'`: nobody answers), records the questions. */
export class ScriptedAnswerer implements Answerer {
  readonly questions: Question[] = []
  readonly #answers: (string | 'never')[]
  readonly #name: string
  readonly #clock: Clock

  constructor(answers: (string | 'never')[], options: { name?: string; clock?: Clock } = {}) {
    this.#answers = [...answers]
    this.#name = options.name ?? 'scripted-answerer'
    this.#clock = options.clock ?? systemClock
  }

  async answer(question: Question, { signal }: { signal: AbortSignal }): Promise<Answer> {
    this.questions.push(question)
    const next = this.#answers.shift()
    if (next === undefined)
      throw new ConfigError(`ScriptedAnswerer: unexpected question #${this.questions.length}: ${question.question}`)
    if (next === 'never') {
      await new Promise<never>((_, reject) => {
        if (signal.aborted) reject(new AbortedError('The question was withdrawn.'))
        signal.addEventListener('abort', () => reject(new AbortedError('The question was withdrawn.')), { once: true })
      })
    }
    return { questionId: question.questionId, answer: next, answeredBy: this.#name, answeredAt: this.#clock.now() }
  }
}
