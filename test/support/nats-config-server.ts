/**
 * A private nats-server run from a configuration file (authorization, TLS, operator mode): tests
 * of credentials and permissions. Ready when the server logs "Server is ready" (the raw probe of
 * `./nats-server.ts` cannot log in to a server that requires credentials). Killed by pid.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { freePort } from './nats-server.ts'

export interface ConfigServer {
  readonly url: string
  readonly port: number
  /** Temp directory of this server (config, store, certificates): deleted by `dispose()`. */
  readonly dir: string
  /** Everything the server has logged so far. */
  log(): string
  /** The permission violations the server has logged so far (publish and subscribe). */
  violations(): PermissionViolation[]
  dispose(): Promise<void>
}

export interface PermissionViolation {
  kind: 'Publish' | 'Subscription'
  user: string
  subject: string
  /** The log line. */
  line: string
}

/** `[ERR] 127.0.0.1:43096 - cid:4 - "v3.3.1:nats.js" - Publish Violation - User "a", Subject "y.z"` */
const VIOLATION = /(Publish|Subscription) Violation - User "([^"]*)", Subject "([^"]*)"/

/** The permission violations in a nats-server log. */
export function parseViolations(log: string): PermissionViolation[] {
  const found: PermissionViolation[] = []
  for (const line of log.split('\n')) {
    const match = VIOLATION.exec(line)
    if (match)
      found.push({ kind: match[1] as PermissionViolation['kind'], user: match[2] as string, subject: match[3] as string, line })
  }
  return found
}

const live = new Set<ChildProcess>()
process.once('exit', () => {
  for (const child of live) if (child.pid !== undefined) child.kill('SIGKILL')
})

/** Starts `nats-server -c` with `config(dir)` after the listen and JetStream lines this helper writes. */
export async function startConfigServer(
  config: (dir: string) => string,
  options: { jetstream?: boolean; timeoutMs?: number } = {},
): Promise<ConfigServer> {
  const port = await freePort()
  const dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-nats-conf-'))
  const head = [`listen: "127.0.0.1:${port}"`]
  if (options.jetstream ?? true) head.push(`jetstream: { store_dir: ${JSON.stringify(path.join(dir, 'js'))} }`)
  const file = path.join(dir, 'server.conf')
  writeFileSync(file, `${head.join('\n')}\n${config(dir)}\n`)
  const child = spawn('nats-server', ['-c', file], { stdio: ['ignore', 'pipe', 'pipe'] })
  live.add(child)
  child.once('exit', () => live.delete(child))
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => fail(new Error(`nats-server not ready:\n${output}`)), options.timeoutMs ?? 10_000)
    const fail = (error: Error) => {
      clearTimeout(timer)
      child.kill('SIGKILL')
      reject(error)
    }
    const read = (chunk: Buffer) => {
      output += chunk.toString('utf8')
      if (output.includes('Server is ready')) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout?.on('data', read)
    child.stderr?.on('data', read)
    child.once('exit', (code) => fail(new Error(`nats-server exited (${code}):\n${output}`)))
  })
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    dir,
    log: () => output,
    violations: () => parseViolations(output),
    async dispose() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve))
        child.kill('SIGTERM')
        await exited
      }
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/** A throwaway CA, a server certificate for 127.0.0.1 / localhost and a client certificate, made with `openssl` in `dir`. */
export function makeCertificates(dir: string): { ca: string; cert: string; key: string; clientCert: string; clientKey: string } {
  const file = (name: string) => path.join(dir, name)
  const openssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' })
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    file('ca.key'),
    '-out',
    file('ca.pem'),
    '-days',
    '1',
    '-subj',
    '/CN=signalbox test CA',
  )
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    file('server.key'),
    '-out',
    file('server.csr'),
    '-subj',
    '/CN=localhost',
  )
  writeFileSync(file('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n')
  openssl(
    'x509',
    '-req',
    '-in',
    file('server.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('server.pem'),
    '-days',
    '1',
    '-extfile',
    file('ext.cnf'),
  )
  // A client certificate from the same CA, for servers that verify clients (`verify: true`).
  openssl(
    'req',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    file('client.key'),
    '-out',
    file('client.csr'),
    '-subj',
    '/CN=signalbox client',
  )
  openssl(
    'x509',
    '-req',
    '-in',
    file('client.csr'),
    '-CA',
    file('ca.pem'),
    '-CAkey',
    file('ca.key'),
    '-CAcreateserial',
    '-out',
    file('client.pem'),
    '-days',
    '1',
  )
  return {
    ca: file('ca.pem'),
    cert: file('server.pem'),
    key: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
  }
}

/** Removes a directory made by a test (certificates made outside a server's dir). */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true })
}
