/**
 * Processes for the cross-process scenarios: the real `signalbox` command (`host`), example scripts
 * and small fixture programs, each run from the repository root on the built packages (see
 * ../support/built.ts). Every process a test starts is killed (by pid) when the test ends,
 * whatever happened.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { connectNatsBus, defaultStreamName } from '@signalbox/actors/nats'
import { onTestFinished } from 'vitest'
import { SIGNALBOX, tsScript } from '../support/built.ts'
import { NATS_URL } from '../support/env.ts'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

const CLEARED = ['SIGNALBOX_MODEL', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'NO_COLOR', 'FORCE_COLOR', 'SIGNALBOX_NATS_URL']

export interface Proc {
  readonly child: ChildProcess
  readonly pid: number
  /** stdout and stderr as they arrive, interleaved. */
  output(): string
  stdout(): string
  /** Resolves when the output contains `text` (or matches); rejects if the process exits first or after `timeoutMs`. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<string>
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>
  kill(signal?: NodeJS.Signals): void
}

/** A TypeScript script (`args[0]`, then its arguments) run from the repository root, piped, no colours, no model from the environment. */
export function start(args: string[], env: Record<string, string> = {}): Proc {
  return startNode([...tsScript(args[0] ?? ''), ...args.slice(1)], env)
}

function startNode(nodeArgs: string[], env: Record<string, string>): Proc {
  const childEnv: NodeJS.ProcessEnv = { ...process.env }
  for (const key of CLEARED) delete childEnv[key]
  Object.assign(childEnv, { NO_COLOR: '1' }, env)
  const child = spawn(process.execPath, nodeArgs, {
    cwd: ROOT,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let all = ''
  let out = ''
  const listeners = new Set<() => void>()
  const onData = (chunk: Buffer, isOut: boolean) => {
    const text = chunk.toString('utf8')
    all += text
    if (isOut) out += text
    for (const listener of [...listeners]) listener()
  }
  child.stdout?.on('data', (chunk: Buffer) => onData(chunk, true))
  child.stderr?.on('data', (chunk: Buffer) => onData(chunk, false))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => {
      resolve({ code, signal })
      for (const listener of [...listeners]) listener()
    }),
  )
  const proc: Proc = {
    child,
    pid: child.pid as number,
    output: () => all,
    stdout: () => out,
    exited,
    waitFor(text, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const matches = () => (typeof text === 'string' ? all.includes(text) : text.test(all))
        const finish = (error?: Error) => {
          clearTimeout(timer)
          listeners.delete(check)
          if (error) reject(error)
          else resolve(all)
        }
        const check = () => {
          if (matches()) finish()
          else if (child.exitCode !== null || child.signalCode !== null)
            finish(new Error(`process exited before printing ${String(text)}:\n${all}`))
        }
        const timer = setTimeout(() => finish(new Error(`no ${String(text)} after ${timeoutMs} ms:\n${all}`)), timeoutMs)
        listeners.add(check)
        check()
      })
    },
    kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) process.kill(child.pid as number, signal)
    },
  }
  onTestFinished(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      proc.kill('SIGKILL')
      await exited
    }
  })
  return proc
}

/** `signalbox host <module> --nats <shared server> --prefix <prefix> ...` */
export function startHost(module: string, prefix: string, extra: string[] = []): Proc {
  return startNode([...SIGNALBOX.slice(1), 'host', module, '--nats', NATS_URL, '--prefix', prefix, ...extra], {})
}

/** When the test ends, deletes what a deployment left on the shared server: its durable stream, and its directory bucket. */
export function cleanupServer(prefix: string, buckets: string[] = []): void {
  onTestFinished(async () => {
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: `cleanup-${prefix}` })
    try {
      for (const stream of [defaultStreamName(prefix), ...buckets.map((bucket) => `KV_${bucket}`)]) {
        await bus.request(`$JS.API.STREAM.DELETE.${stream}`, '', { timeoutMs: 3_000 }).catch(() => {})
      }
    } finally {
      await bus.close()
    }
  })
}
