/**
 * Helpers for the CLI tests: run `signalbox` (the real bin) as child processes, wait for what
 * they print, drive a real pseudo-terminal with tmux, and remove a test prefix's stream.
 * Every process and tmux session started here is tracked and stopped by `cleanupAll()`.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { connectNatsBus } from '@signalbox/actors/nats'
import { usedApprovalsBucket } from '@signalbox/core/bus'
import { SIGNALBOX } from '../support/built.ts'
import { NATS_URL } from '../support/env.ts'
import { whileWaiting } from '../support/waiting.ts'

const here = path.dirname(fileURLToPath(import.meta.url))
export const ROOT = path.resolve(here, '../..')
export const TSX = path.join(ROOT, 'node_modules/.bin/tsx')
export const FIXTURES = path.join(here, 'fixtures')
export { NATS_URL, SIGNALBOX }

const execFileAsync = promisify(execFile)

export interface CliProcess {
  readonly child: ChildProcess
  readonly name: string
  /** stdout and stderr so far, interleaved as received. */
  readonly output: string
  readonly stdout: string
  readonly stderr: string
  readonly exited: Promise<number>
  /**
   * Resolves with the output once it matches; rejects (with the output) if the process exits
   * first, or after `timeoutMs` when one is given (by default the test's time limit is the guard).
   */
  waitFor(pattern: string | RegExp, timeoutMs?: number): Promise<string>
  /** Sends `signal` and waits for the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number>
}

const live = new Set<CliProcess>()

/** Starts a command (default: the `signalbox` command, built) with colours off. */
export function startProcess(
  args: string[],
  options: { name?: string; env?: NodeJS.ProcessEnv; command?: string[]; stdin?: 'ignore' | 'pipe' } = {},
): CliProcess {
  const command = options.command ?? SIGNALBOX
  const child = spawn(command[0] as string, [...command.slice(1), ...args], {
    cwd: ROOT,
    stdio: [options.stdin ?? 'ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '', SIGNALBOX_NATS_URL: '', NATS_URL: '', ...options.env },
  })
  let output = ''
  let stdout = ''
  let stderr = ''
  const waiters = new Set<() => void>()
  const notify = () => {
    for (const waiter of [...waiters]) waiter()
  }
  child.stdout?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8')
    stdout += chunk.toString('utf8')
    notify()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8')
    stderr += chunk.toString('utf8')
    notify()
  })
  let exitCode: number | undefined
  const exited = new Promise<number>((resolve) => {
    child.once('close', (code, signal) => {
      exitCode = code ?? (signal ? 128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 9) : 1)
      live.delete(proc)
      notify()
      resolve(exitCode)
    })
  })
  const name = options.name ?? args.slice(0, 2).join(' ')
  const proc: CliProcess = {
    child,
    name,
    get output() {
      return output
    },
    get stdout() {
      return stdout
    },
    get stderr() {
      return stderr
    },
    exited,
    waitFor(pattern, timeoutMs) {
      const matches = () => (typeof pattern === 'string' ? output.includes(pattern) : pattern.test(output))
      const waited = whileWaiting(() => `${name} to print ${String(pattern)}; its output so far:\n${output}`)
      return new Promise((resolve, reject) => {
        const check = () => {
          if (matches()) {
            done()
            resolve(output)
          } else if (exitCode !== undefined) {
            done()
            reject(new Error(`${name} exited (${exitCode}) without printing ${String(pattern)}; output:\n${output}`))
          }
        }
        const timer =
          timeoutMs === undefined
            ? undefined
            : setTimeout(() => {
                done()
                reject(new Error(`${name}: no ${String(pattern)} after ${timeoutMs} ms; output:\n${output}`))
              }, timeoutMs)
        const done = () => {
          clearTimeout(timer)
          waiters.delete(check)
          waited()
        }
        waiters.add(check)
        check()
      })
    },
    async stop(signal = 'SIGTERM') {
      if (exitCode !== undefined) return exitCode
      child.kill(signal)
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      try {
        return await exited
      } finally {
        clearTimeout(timer)
      }
    },
  }
  live.add(proc)
  return proc
}

/**
 * Runs `signalbox ...` to the end. With `timeoutMs` the process is killed (SIGKILL) after that
 * long; by default the test's time limit is the guard, and `cleanupAll` stops what is left.
 */
export async function runCli(args: string[], options: { env?: NodeJS.ProcessEnv; timeoutMs?: number } = {}) {
  const proc = startProcess(args, options)
  const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => proc.child.kill('SIGKILL'), options.timeoutMs)
  const waited = whileWaiting(() => `${proc.name} to exit; its output so far:\n${proc.output}`)
  const code = await proc.exited
  clearTimeout(timer)
  waited()
  return { code, stdout: proc.stdout, stderr: proc.stderr, output: proc.output }
}

/** `--nats` and `--prefix` for a test's private deployment. */
export const busArgs = (prefix: string) => ['--nats', NATS_URL, '--prefix', prefix]

/** Deletes the JetStream stream of a test prefix (and with it its consumers). */
export async function deleteStream(prefix: string): Promise<void> {
  const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: `cleanup-${prefix}` })
  try {
    await bus.request(`$JS.API.STREAM.DELETE.${bus.streamName}`, '', { timeoutMs: 3_000 }).catch(() => {})
    // The enforcing tool hosts' ledger of used approvals, if the test had one.
    await bus.request(`$JS.API.STREAM.DELETE.KV_${usedApprovalsBucket(prefix)}`, '', { timeoutMs: 3_000 }).catch(() => {})
  } finally {
    await bus.close()
  }
}

// --- tmux: a real pseudo-terminal -----------------------------------------------------------

/** A private tmux server for this test process: never touches anyone else's sessions. */
const TMUX_SOCKET = `sbx-cli-test-${process.pid}`
const sessions = new Set<TmuxSession>()

async function tmux(...args: string[]): Promise<string> {
  const { stdout } = await execFileAsync('tmux', ['-L', TMUX_SOCKET, '-u', ...args], { encoding: 'utf8' })
  return stdout
}

export class TmuxSession {
  readonly name = `sbx-${randomBytes(4).toString('hex')}`
  #started = false

  /** Runs `argv` in a fresh 200x50 terminal; the pane stays open after it exits (`[exit N]`). */
  async start(argv: string[], env: Record<string, string> = {}): Promise<void> {
    const quote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`
    const assignments = Object.entries(env).map(([k, v]) => `${k}=${quote(v)}`)
    const command = `env ${assignments.join(' ')} ${argv.map(quote).join(' ')}; echo "[exit $?]"; sleep 600`
    await tmux('new-session', '-d', '-s', this.name, '-x', '200', '-y', '50', '-c', ROOT, command)
    this.#started = true
    sessions.add(this)
  }

  /** The screen and its scrollback, as plain text. */
  async capture(): Promise<string> {
    return tmux('capture-pane', '-p', '-J', '-S', '-500', '-t', this.name)
  }

  /** Types keys (`Enter`, `C-c`) or, with `literal`, text exactly as given. */
  async send(keys: string, options: { literal?: boolean } = {}): Promise<void> {
    await tmux('send-keys', '-t', this.name, ...(options.literal ? ['-l', keys] : [keys]))
  }

  async type(text: string): Promise<void> {
    await this.send(text, { literal: true })
    await this.send('Enter')
  }

  /** Resolves with the screen once `check` accepts it. */
  async waitFor(check: string | RegExp | ((screen: string) => boolean), timeoutMs = 20_000): Promise<string> {
    const ok = (screen: string) =>
      typeof check === 'string' ? screen.includes(check) : check instanceof RegExp ? check.test(screen) : check(screen)
    const deadline = Date.now() + timeoutMs
    let screen = ''
    for (;;) {
      screen = await this.capture()
      if (ok(screen)) return screen
      if (Date.now() > deadline) throw new Error(`tmux ${this.name}: screen never matched ${String(check)}:\n${screen}`)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }

  /** Ctrl-C (the CLI stops cleanly), then the session goes. */
  async close(): Promise<void> {
    if (!this.#started) return
    this.#started = false
    sessions.delete(this)
    try {
      await this.send('C-c')
      await this.waitFor('[exit ', 5_000)
    } catch {
      // killed below either way
    }
    await tmux('kill-session', '-t', this.name).catch(() => {})
  }
}

/** Stops every process and tmux session the tests started (afterEach). */
export async function cleanupAll(): Promise<void> {
  await Promise.all([...sessions].map((session) => session.close()))
  await Promise.all([...live].map((proc) => proc.stop('SIGTERM')))
}

/** Ends this file's private tmux server (afterAll). */
export async function stopTmuxServer(): Promise<void> {
  await tmux('kill-server').catch(() => {})
}

/**
 * Polls `check` until it holds. `what` names it in the report if the test fails first; a
 * `timeoutMs`, when given, is a deadline of its own (by default the test's time limit is the guard).
 */
export async function until(check: () => boolean, what?: string): Promise<void>
export async function until(check: () => boolean, timeoutMs: number, what?: string): Promise<void>
export async function until(check: () => boolean, timeoutOrWhat?: number | string, named?: string): Promise<void> {
  const timeoutMs = typeof timeoutOrWhat === 'number' ? timeoutOrWhat : Number.POSITIVE_INFINITY
  const what = (typeof timeoutOrWhat === 'string' ? timeoutOrWhat : named) ?? 'condition'
  const deadline = Date.now() + timeoutMs
  const waited = whileWaiting(() => what)
  try {
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  } finally {
    waited()
  }
}
