/** Runs the CLI in this process (`main(argv, io)`, from the repository root) with captured output: fast, for variants and errors. */
import { PassThrough } from 'node:stream'
import { type CommandIO, main } from '@signalbox/cli/internal'

export interface Captured {
  readonly stdout: string
  readonly stderr: string
  readonly output: string
}

export interface MainRun extends Captured {
  /** The exit code, once the command returns. */
  readonly done: Promise<number>
  readonly stdin: PassThrough
  waitFor(pattern: string | RegExp, timeoutMs?: number): Promise<string>
  /** Like Ctrl-C: aborts `io.signal`, then waits for the exit code. */
  stop(): Promise<number>
}

export function startMain(argv: string[], options: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): MainRun {
  let stdout = ''
  let stderr = ''
  let output = ''
  const listeners = new Set<() => void>()
  const writer = (append: (text: string) => void) =>
    Object.assign(new PassThrough(), {
      write(chunk: string | Uint8Array) {
        const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8')
        append(text)
        output += text
        for (const listener of [...listeners]) listener()
        return true
      },
      isTTY: false,
    })
  const stdin = new PassThrough()
  const controller = new AbortController()
  const io: CommandIO = {
    stdout: writer((t) => {
      stdout += t
    }),
    stderr: writer((t) => {
      stderr += t
    }),
    stdin,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, USER: 'tester', NO_COLOR: '1', ...options.env },
    cwd: options.cwd ?? new URL('../..', import.meta.url).pathname,
    signal: controller.signal,
  }
  let code: number | undefined
  const done = main(argv, io).then((c) => {
    code = c
    for (const listener of [...listeners]) listener()
    return c
  })
  return {
    get stdout() {
      return stdout
    },
    get stderr() {
      return stderr
    },
    get output() {
      return output
    },
    done,
    stdin,
    waitFor(pattern, timeoutMs = 15_000) {
      const matches = () => (typeof pattern === 'string' ? output.includes(pattern) : pattern.test(output))
      return new Promise((resolve, reject) => {
        const check = () => {
          if (matches()) finish(() => resolve(output))
          else if (code !== undefined) finish(() => reject(new Error(`exited (${code}) without ${String(pattern)}:\n${output}`)))
        }
        const timer = setTimeout(
          () => finish(() => reject(new Error(`no ${String(pattern)} after ${timeoutMs} ms:\n${output}`))),
          timeoutMs,
        )
        const finish = (then: () => void) => {
          clearTimeout(timer)
          listeners.delete(check)
          then()
        }
        listeners.add(check)
        check()
      })
    },
    stop() {
      controller.abort()
      return done
    },
  }
}

/** Runs a command to its end in this process. */
export async function runMain(
  argv: string[],
  options: { env?: NodeJS.ProcessEnv; cwd?: string } = {},
): Promise<Captured & { code: number }> {
  const run = startMain(argv, options)
  const code = await run.done
  return { code, stdout: run.stdout, stderr: run.stderr, output: run.output }
}
