/**
 * Spawns a private nats-server for tests that stop, restart or break the server (the shared one at
 * `NATS_URL` must never be touched). Like nats.js's `nst/src/launcher.ts`: a port the test did not
 * hard-code, wait for readiness (TCP, then a JetStream API answer), kill by pid, and always clean up,
 * even when the test process exits early.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { rmSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'

export interface NatsServerOptions {
  /** Enable JetStream (`-js -sd <storeDir>`). Default true. */
  jetstream?: boolean
  /** JetStream store directory. Default: a fresh temp dir, deleted by `dispose()` / at exit. */
  storeDir?: string
  /** Default: a free port picked by the OS. */
  port?: number
  /** How long to wait for readiness. Default 10 s. */
  startTimeoutMs?: number
  /**
   * A server config file's text (`-c`), for what flags cannot say (a cluster: `server_name`,
   * `cluster { ... }`). Address, port and JetStream store still come from the options above.
   */
  config?: string
  /** `config` names the store dir itself (`jetstream { store_dir }`): no `-sd` flag (the server refuses both). */
  storeDirInConfig?: boolean
  /** A user the readiness probe logs in as, for a config with an `authorization` block. */
  probeLogin?: { user: string; pass: string }
  /** Set up (port, store, config) but not started: `restart()` starts it. */
  stopped?: boolean
}

export interface NatsServer {
  readonly url: string
  readonly port: number
  /** Pid of the running process (changes on `restart()`); undefined while stopped. */
  readonly pid: number | undefined
  readonly storeDir: string
  readonly running: boolean
  /** Everything the server logged, across restarts (permission violations are parsed from it). */
  log(): string
  /** SIGTERM, then SIGKILL after 5 s; by pid. Keeps the store dir (for `restart()`). */
  stop(): Promise<void>
  /** SIGKILL by pid (a crash: nothing flushed); resolves once the process is gone. Keeps the store dir. */
  kill(): Promise<void>
  /** Stops if running, then starts again on the same port and store dir; resolves when ready. */
  restart(): Promise<void>
  /**
   * Replaces the config file's text and has the running server reload it (SIGHUP, as
   * `nats-server --signal reload` does); resolves once it logged the reload. A stopped server
   * starts with it.
   */
  reconfigure(config: string): Promise<void>
  /** Stops and removes the store dir if this helper created it. */
  dispose(): Promise<void>
}

const live = new Set<ChildProcess>()
const tempDirs = new Set<string>()
let exitHookInstalled = false

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // Last resort if a test forgot (or never reached) its teardown: no orphan servers, no temp dirs.
  process.once('exit', () => {
    for (const child of live) {
      try {
        if (child.pid !== undefined) process.kill(child.pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true })
  })
}

/** Binds port 0, reads the port the OS picked, releases it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer()
    server.unref()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const address = server.address()
      const port = typeof address === 'object' && address !== null ? address.port : 0
      server.close(() => (port > 0 ? resolve(port) : reject(new Error('no free port'))))
    })
  })
}

export async function startNatsServer(options: NatsServerOptions = {}): Promise<NatsServer> {
  installExitHook()
  const jetstream = options.jetstream ?? true
  const port = options.port ?? (await freePort())
  const ownsStoreDir = options.storeDir === undefined
  const storeDir = options.storeDir ?? (await mkdtemp(path.join(os.tmpdir(), 'signalbox-nats-')))
  if (ownsStoreDir) tempDirs.add(storeDir)
  const startTimeoutMs = options.startTimeoutMs ?? 10_000
  let child: ChildProcess | undefined
  let output: string[] = []
  let fullLog = ''

  let configFile: string | undefined
  if (options.config !== undefined) {
    configFile = path.join(await mkdtemp(path.join(os.tmpdir(), 'signalbox-nats-conf-')), 'server.conf')
    tempDirs.add(path.dirname(configFile))
    await writeFile(configFile, options.config)
  }

  const start = async (): Promise<void> => {
    const args = [...(configFile ? ['-c', configFile] : []), '-a', '127.0.0.1', '-p', String(port)]
    if (jetstream) args.push('-js', ...(options.storeDirInConfig ? [] : ['-sd', storeDir]))
    output = []
    const proc = spawn('nats-server', args, { stdio: ['ignore', 'pipe', 'pipe'] })
    child = proc
    live.add(proc)
    const keep = (chunk: Buffer) => {
      fullLog += chunk.toString('utf8')
      // Only the tail is kept, for the error message when the server does not come up.
      output.push(...chunk.toString('utf8').split('\n').filter(Boolean))
      if (output.length > 40) output.splice(0, output.length - 40)
    }
    proc.stdout?.on('data', keep)
    proc.stderr?.on('data', keep)
    proc.once('exit', () => live.delete(proc))
    const spawnError = new Promise<never>((_, reject) => proc.once('error', reject))
    spawnError.catch(() => {})
    const deadline = Date.now() + startTimeoutMs
    for (;;) {
      if (proc.exitCode !== null || proc.signalCode !== null) {
        throw new Error(`nats-server exited during startup (code ${proc.exitCode}):\n${output.join('\n')}`)
      }
      if (await Promise.race([probe(port, jetstream, options.probeLogin), spawnError])) return
      if (Date.now() > deadline) {
        await stop()
        throw new Error(`nats-server on port ${port} not ready after ${startTimeoutMs} ms:\n${output.join('\n')}`)
      }
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }

  const stop = async (): Promise<void> => {
    const proc = child
    child = undefined
    if (proc === undefined || proc.pid === undefined || proc.exitCode !== null || proc.signalCode !== null) return
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
    signal(proc.pid, 'SIGTERM')
    const timer = setTimeout(() => signal(proc.pid as number, 'SIGKILL'), 5_000)
    try {
      await exited
    } finally {
      clearTimeout(timer)
      live.delete(proc)
    }
  }

  const kill = async (): Promise<void> => {
    const proc = child
    child = undefined
    if (proc === undefined || proc.pid === undefined || proc.exitCode !== null || proc.signalCode !== null) return
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
    signal(proc.pid, 'SIGKILL')
    await exited
    live.delete(proc)
  }

  if (!options.stopped) await start()
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    get pid() {
      return child?.pid
    },
    storeDir,
    log: () => fullLog,
    get running() {
      return child !== undefined && child.exitCode === null && child.signalCode === null
    },
    stop,
    kill,
    restart: async () => {
      await stop()
      await start()
    },
    reconfigure: async (config: string) => {
      if (configFile === undefined) throw new Error('reconfigure: this server was started without a config')
      await writeFile(configFile, config)
      const proc = child
      if (proc?.pid === undefined) return
      const reloads = () => fullLog.split('Reloaded server configuration').length
      const before = reloads()
      signal(proc.pid, 'SIGHUP')
      const deadline = Date.now() + 10_000
      while (reloads() === before) {
        if (Date.now() > deadline) throw new Error(`nats-server on port ${port} did not reload:\n${output.join('\n')}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
    dispose: async () => {
      await stop()
      if (ownsStoreDir) {
        await rm(storeDir, { recursive: true, force: true })
        tempDirs.delete(storeDir)
      }
      if (configFile !== undefined) {
        await rm(path.dirname(configFile), { recursive: true, force: true })
        tempDirs.delete(path.dirname(configFile))
      }
    },
  }
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name)
  } catch {
    // already exited
  }
}

/**
 * One readiness attempt over the raw NATS protocol (the test workspace has no NATS client):
 * INFO → CONNECT; then PING/PONG, or with JetStream a `$JS.API.INFO` request that must get an
 * account-info answer (a 503 status means JetStream is not up yet).
 */
function probe(port: number, jetstream: boolean, login?: { user: string; pass: string }, timeoutMs = 1_000): Promise<boolean> {
  const credentials = login ? `,"user":${JSON.stringify(login.user)},"pass":${JSON.stringify(login.pass)}` : ''
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    let buffer = ''
    let sent = false
    const done = (ok: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      resolve(ok)
    }
    const timer = setTimeout(() => done(false), timeoutMs)
    socket.on('error', () => done(false))
    socket.on('data', (chunk) => {
      buffer += chunk.toString('latin1')
      if (!sent && buffer.startsWith('INFO ') && buffer.includes('\r\n')) {
        sent = true
        socket.write(
          jetstream
            ? `CONNECT {"verbose":false,"headers":true,"no_responders":true${credentials}}\r\nSUB _INBOX.probe 1\r\nPUB $JS.API.INFO _INBOX.probe 0\r\n\r\n`
            : `CONNECT {"verbose":false${credentials}}\r\nPING\r\n`,
        )
        return
      }
      if (!jetstream) {
        if (buffer.includes('PONG\r\n')) done(true)
        return
      }
      if (buffer.includes('io.nats.jetstream.api.v1.account_info_response')) done(!buffer.includes('"error"'))
      else if (buffer.includes('HMSG _INBOX.probe') && buffer.includes('503')) done(false)
    })
  })
}
