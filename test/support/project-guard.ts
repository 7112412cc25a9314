/**
 * vitest setup file: holds each test file to its project (see projects.ts). A file in a project
 * that may not start processes fails when it starts one, and a file in a project that may not use
 * NATS fails when it connects to the shared NATS server or spawns a nats-server, with a message
 * that names the project it belongs in. This keeps `pnpm test --project unit` honest: it runs on a
 * machine with neither NATS nor Chromium.
 */
import childProcess from 'node:child_process'
import { syncBuiltinESMExports } from 'node:module'
import net from 'node:net'
import path from 'node:path'
import { ALLOWED, type ProjectName } from './projects.ts'

const project = process.env.SIGNALBOX_TEST_PROJECT as ProjectName | undefined
const allowed = project ? ALLOWED[project] : undefined

/** The shared NATS server's port (as test/support/env.ts reads it: `SIGNALBOX_NATS_URL`, else 4222). */
const natsPort = Number(new URL(process.env.SIGNALBOX_NATS_URL || 'nats://127.0.0.1:4222').port || 4222)

/** What a NATS test may start: servers, and openssl for their TLS certificates. */
const NATS_TOOLS = new Set(['nats-server', 'openssl'])

function misplaced(what: string, belongs: ProjectName): Error {
  const suffix = belongs === 'processes' ? 'process' : belongs
  return new Error(
    `This test ${what}, which the "${project}" project does not allow: it belongs in the "${belongs}" project ` +
      `(add it to test/support/projects.ts, or name it *.${suffix}.test.ts).`,
  )
}

// Files share workers (isolate: false) and this runs before each: guard a worker once.
const GUARDED = Symbol.for('signalbox.test.project-guard')
const firstInWorker = !Reflect.get(globalThis, GUARDED)
Reflect.set(globalThis, GUARDED, true)

if (firstInWorker && allowed && !allowed.processes) {
  const cp = childProcess as unknown as Record<string, (...args: unknown[]) => unknown>
  for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
    const original = cp[name]
    if (typeof original !== 'function') continue
    cp[name] = function guarded(this: unknown, ...args: unknown[]) {
      const command = typeof args[0] === 'string' ? args[0] : String(args[0])
      const natsServer = NATS_TOOLS.has(path.basename(command.split(' ')[0] ?? ''))
      if (!natsServer) throw misplaced(`starts a child process (${command})`, 'processes')
      if (!allowed.nats) throw misplaced(`starts ${command}`, 'nats')
      return original.apply(this, args)
    }
  }
  syncBuiltinESMExports()
}

if (firstInWorker && allowed && !allowed.nats) {
  const connect = net.Socket.prototype.connect as (...args: unknown[]) => net.Socket
  net.Socket.prototype.connect = function guarded(this: net.Socket, ...args: unknown[]) {
    const first = args[0]
    const options = Array.isArray(first) ? first[0] : first
    const port = typeof options === 'object' && options !== null ? Number((options as { port?: unknown }).port) : Number(first)
    if (port === natsPort) throw misplaced(`connects to the NATS server on port ${natsPort}`, 'nats')
    return connect.apply(this, args)
  } as typeof net.Socket.prototype.connect
}
