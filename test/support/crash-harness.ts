/**
 * Crash tests: start a program as ONE process (`node <compiled file.ts>`, on the built packages:
 * see built.ts; `tsx file.ts` would fork a child that a kill of the tsx pid leaves running), wait
 * for the line it prints when ready, SIGKILL it by pid, and keep everything it printed. Every child
 * still alive when the test process exits is killed, so a failed test leaves no orphan behind.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { tsScript } from './built.ts'
import { whileWaiting } from './waiting.ts'

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url))

export interface CrashChildOptions {
  args?: string[]
  env?: Record<string, string>
  /** Resolve `start` once the output has this line (a string: the line contains it). Default: none. */
  ready?: string | RegExp
  /** How long to wait for `ready`. Default 20 s. */
  readyTimeoutMs?: number
  cwd?: string
}

export interface CrashChild {
  readonly pid: number
  readonly process: ChildProcess
  /** stdout and stderr, interleaved, as they arrived. */
  output(): string
  stdout(): string
  /** Resolves with the first output line matching `pattern`; rejects if the child exits first or after `timeoutMs` (when given). */
  waitForLine(pattern: string | RegExp, timeoutMs?: number): Promise<string>
  /** Writes one line to the child's stdin. */
  send(line: string): void
  /** Sends `signal` (default SIGKILL) by pid and resolves when the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<ChildExit>
  readonly exited: Promise<ChildExit>
}

export interface ChildExit {
  code: number | null
  signal: NodeJS.Signals | null
}

const live = new Set<ChildProcess>()
let exitHookInstalled = false

/** Starts `script` (a path, relative to the repository root or absolute) and waits for its readiness line. */
export async function startCrashChild(script: string, options: CrashChildOptions = {}): Promise<CrashChild> {
  if (!exitHookInstalled) {
    exitHookInstalled = true
    process.once('exit', () => {
      for (const child of live) if (child.pid !== undefined) signalPid(child.pid, 'SIGKILL')
    })
  }
  const child = spawn(process.execPath, [...tsScript(script), ...(options.args ?? [])], {
    cwd: options.cwd ?? REPO_ROOT,
    env: { ...process.env, NO_COLOR: '1', ...options.env },
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  if (child.pid === undefined) {
    const error = await new Promise<Error>((resolve) => child.once('error', resolve))
    throw new Error(`could not start ${script}: ${error.message}`)
  }
  live.add(child)
  let all = ''
  let out = ''
  const listeners = new Set<() => void>()
  const notify = () => {
    for (const listener of [...listeners]) listener()
  }
  child.stdout.on('data', (chunk: Buffer) => {
    all += chunk.toString('utf8')
    out += chunk.toString('utf8')
    notify()
  })
  child.stderr.on('data', (chunk: Buffer) => {
    all += chunk.toString('utf8')
    notify()
  })
  child.stdin.on('error', () => {}) // writing to a killed child is not an error worth a crash
  // 'close' (not 'exit'): by then every byte the child printed has been read.
  let closed = false
  const exited = new Promise<ChildExit>((resolve) =>
    child.once('close', (code, signal) => {
      closed = true
      live.delete(child)
      resolve({ code, signal })
      notify()
    }),
  )
  const gone = () => closed

  // No deadline by default: a child's start-up under load takes what it takes, and the test's time
  // limit is the hang guard (a stuck wait is named in the failure report).
  const waitForLine = (pattern: string | RegExp, timeoutMs?: number): Promise<string> =>
    new Promise((resolve, reject) => {
      const find = () =>
        all.split('\n').find((line) => (typeof pattern === 'string' ? line.includes(pattern) : pattern.test(line)))
      const waited = whileWaiting(() => `${script} to print ${String(pattern)}; its output so far:\n${all}`)
      const finish = (error: Error | undefined, line?: string) => {
        clearTimeout(timer)
        listeners.delete(check)
        waited()
        if (error) reject(error)
        else resolve(line as string)
      }
      const check = () => {
        const line = find()
        if (line !== undefined) finish(undefined, line)
        else if (gone()) finish(new Error(`${script} exited before printing ${String(pattern)}:\n${all}`))
      }
      const timer =
        timeoutMs === undefined
          ? undefined
          : setTimeout(
              () => finish(new Error(`${script} printed no ${String(pattern)} within ${timeoutMs} ms:\n${all}`)),
              timeoutMs,
            )
      listeners.add(check)
      check()
    })

  const handle: CrashChild = {
    pid: child.pid,
    process: child,
    output: () => all,
    stdout: () => out,
    waitForLine,
    send: (line) => {
      child.stdin.write(`${line}\n`)
    },
    kill: async (signal = 'SIGKILL') => {
      if (child.exitCode === null && child.signalCode === null) signalPid(child.pid as number, signal)
      return exited
    },
    exited,
  }
  if (options.ready !== undefined) {
    try {
      await waitForLine(options.ready, options.readyTimeoutMs)
    } catch (error) {
      await handle.kill()
      throw error
    }
  }
  return handle
}

/** True while a process with this pid exists (signal 0 probes without delivering anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function signalPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}
