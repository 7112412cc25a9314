/**
 * One terminal, many requests: a single readline interface for the whole process and a queue,
 * so one approval (its question and the reason that follows) holds the terminal until it is
 * done, and lines printed meanwhile do not garble the prompt being typed.
 */
import { createInterface, type Interface } from 'node:readline/promises'
import { AbortedError } from '@signalbox/core'

/**
 * Asks one question. A function prompt is redrawn every second on a terminal (what is typed
 * stays), e.g. to count down the time left.
 */
export type Ask = (prompt: string | (() => string)) => Promise<string>

/** How often a function prompt is redrawn. */
const PROMPT_REFRESH_MS = 1_000

export interface Prompter {
  /**
   * Runs `fn` when the terminal is free (one session at a time). Rejects with `AbortedError`
   * when `signal` aborts, whether still waiting for its turn or in the middle of a question.
   */
  session<T>(signal: AbortSignal, fn: (ask: Ask) => Promise<T>): Promise<T>
  /** Prints whole lines; a prompt in progress is redrawn below them. */
  print(text: string): void
  /** Called when the input ends (Ctrl-D, closed pipe). */
  onClose(listener: () => void): void
  close(): void
}

export function createPrompter(options: {
  input: NodeJS.ReadableStream & { isTTY?: boolean }
  output: NodeJS.WritableStream & { isTTY?: boolean }
  /** Ctrl-C typed at a prompt (the terminal is in raw mode, so no SIGINT is sent). */
  onInterrupt?: () => void
}): Prompter {
  const { input, output } = options
  const terminal = Boolean(input.isTTY && output.isTTY)
  let rl: Interface | undefined
  let closed = false
  /** `close()` was called: the input did not end on its own, so nobody is told. */
  let closedByUs = false
  const closeListeners: (() => void)[] = []
  const closing = new AbortController()
  /** Settles when the last queued session is over. */
  let tail: Promise<void> = Promise.resolve()
  let prompt: string | undefined

  const open = (): Interface => {
    if (rl) return rl
    rl = createInterface({ input: input as NodeJS.ReadableStream, output: output as NodeJS.WritableStream, terminal })
    rl.on('SIGINT', () => options.onInterrupt?.())
    rl.on('close', () => {
      closed = true
      closing.abort(new AbortedError('the terminal input ended'))
      if (!closedByUs) for (const listener of closeListeners) listener()
    })
    return rl
  }

  const ask =
    (signal: AbortSignal): Ask =>
    async (promptOf) => {
      if (closed) throw new AbortedError('the terminal input ended')
      const line = open()
      const text = typeof promptOf === 'function' ? promptOf() : promptOf
      prompt = text
      const refresh =
        typeof promptOf === 'function' && terminal
          ? setInterval(() => {
              const next = promptOf()
              if (next === prompt) return
              prompt = next
              line.setPrompt(next)
              line.prompt(true)
            }, PROMPT_REFRESH_MS)
          : undefined
      refresh?.unref()
      try {
        const answer = await line.question(text, { signal: AbortSignal.any([signal, closing.signal]) })
        // Piped input is not echoed: end the prompt's line (a terminal in cooked mode echoes it).
        if (!terminal && !input.isTTY) output.write('\n')
        return answer
      } catch (error) {
        if (signal.aborted) {
          // Abandon the half-typed line: the next prompt starts clean.
          if (terminal) {
            line.write(null, { ctrl: true, name: 'u' })
            output.write('\r\x1b[2K')
          } else {
            output.write('\n')
          }
          throw signal.reason instanceof Error ? signal.reason : new AbortedError('the prompt was withdrawn')
        }
        if (closing.signal.aborted) throw closing.signal.reason
        throw error
      } finally {
        if (refresh) clearInterval(refresh)
        prompt = undefined
      }
    }

  return {
    async session(signal, fn) {
      const previous = tail
      let release!: () => void
      const mine = new Promise<void>((resolve) => {
        release = resolve
      })
      // The next session waits for the previous one and this one, even if this one leaves early.
      tail = previous.then(() => mine)
      try {
        await untilAborted(previous, signal)
        return await fn(ask(signal))
      } finally {
        release()
      }
    },
    print(text) {
      if (prompt === undefined || !rl) {
        output.write(`${text}\n`)
        return
      }
      if (terminal) {
        output.write(`\r\x1b[2K${text}\n`)
        rl.prompt(true)
      } else {
        output.write(`\n${text}\n${prompt}`)
      }
    },
    onClose(listener) {
      closeListeners.push(listener)
      open()
    },
    close() {
      closedByUs = true
      rl?.close()
    },
  }
}

function untilAborted(wait: Promise<void>, signal: AbortSignal): Promise<void> {
  const reason = () => (signal.reason instanceof Error ? signal.reason : new AbortedError('withdrawn before its turn'))
  if (signal.aborted) return Promise.reject(reason())
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(reason())
    signal.addEventListener('abort', onAbort, { once: true })
    void wait.then(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    })
  })
}
