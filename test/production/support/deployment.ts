/**
 * The production deployment the rehearsal runs, set up the way docs/production.md says: a 3-node
 * nats-server cluster (JetStream) whose `authorization` block is what `signalbox nats permissions`
 * prints for each user, every process under its own user and nkey (`signalbox keys gen`), the
 * stream and the KV buckets made with three replicas by the processes' `--replicas 3`, and one trust policy file
 * the agents, hosts, reviewers and console read. The CLI commands run in-process here (`main`) only
 * to generate keys and permissions; every actor runs as its own `signalbox` process.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { Writable } from 'node:stream'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { main } from '@signalbox/cli/internal'
import { type CliProcess, startProcess } from '../../cli/support.ts'
import { type NatsCluster, startNatsCluster } from '../../support/nats-cluster.ts'
import { type PermissionViolation, parseViolations } from '../../support/nats-config-server.ts'

export const PREFIX = 'prod.v1'
export const RUN_BUCKET = 'prod_runs'
/** The operator's superuser: provisions the stream and buckets; in the test, also the forger. */
export const ADMIN = { user: 'admin', pass: 'admin-secret' }

/** A process of the deployment: its NATS user (an nkey), its roles and the scope its permissions are cut to. */
export interface UserSpec {
  roles: string[]
  /** `--agent`: the agents a host serves. */
  agents?: string[]
  /** `--child`: the agents it delegates to. */
  children?: string[]
}

export interface User {
  readonly name: string
  readonly publicKey: string
  /** Its seed file (mode 0600): its login, and the key it signs with. */
  readonly seedFile: string
  /** The connection flags of a `signalbox` command run as this user, least privilege. */
  readonly flags: string[]
}

/** A trust policy file (docs/security.md), the fields the rehearsal uses. */
export interface TrustFile {
  keys: Record<string, string>
  reviewers: Record<string, string[]>
  answerers: string[]
  steerers: string[]
  controllers: string[]
  agents: Record<string, string[]>
}

/** Every user of the rehearsal and what it runs. */
export const USERS = {
  /** Agent host A: the planner, the trains agent and the claw agent; the planner delegates to the hotel. */
  hosta: { roles: ['agent'], agents: ['planner', 'trains', 'claw', 'clerk'], children: ['hotel'] },
  /** Agent hosts B and C: the hotel agent (C stands by: it takes over B's runs when B dies). */
  hostb: { roles: ['agent'], agents: ['hotel'] },
  hostc: { roles: ['agent'], agents: ['hotel'] },
  /** The front desk: the application that starts the root runs (a parent of the planner and the claw). */
  desk: { roles: ['agent'], agents: ['desk'], children: ['planner', 'claw', 'clerk'] },
  /** The claw machine's tool host (enforcing) and the MCP tool host (enforcing). */
  tools: { roles: ['tool-host'] },
  mcp: { roles: ['tool-host'] },
  /** Two reviewer services (`signalbox review`) sharing the hotel's requests, and a console. */
  tina: { roles: ['reviewer', 'answerer'], agents: ['hotel'] },
  rita: { roles: ['reviewer', 'answerer'], agents: ['hotel'] },
  sam: { roles: ['console'] },
  /** The answerer, the steering operator, the observer (watch, audit). */
  ana: { roles: ['answerer'] },
  ops: { roles: ['steering'] },
  watcher: { roles: ['observer'] },
} as const satisfies Record<string, UserSpec>

export type UserName = keyof typeof USERS

/** Runs one `signalbox` command line in this process; its exit code and what it printed. */
export async function signalbox(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = ''
  let stderr = ''
  const sink = (write: (text: string) => void) =>
    new Writable({
      write(chunk, _encoding, done) {
        write(String(chunk))
        done()
      },
    })
  const code = await main(argv, {
    stdout: sink((text) => {
      stdout += text
    }) as unknown as NodeJS.WriteStream,
    stderr: sink((text) => {
      stderr += text
    }) as unknown as NodeJS.WriteStream,
    stdin: process.stdin,
    env: { ...process.env, NO_COLOR: '1' },
    cwd: process.cwd(),
  })
  return { code, stdout, stderr }
}

async function must(argv: string[]): Promise<string> {
  const { code, stdout, stderr } = await signalbox(argv)
  if (code !== 0) throw new Error(`signalbox ${argv.join(' ')} exited ${code}:\n${stderr}`)
  return stdout
}

/** The `authorization { users = [...] }` entries of one printed block (what goes inside the brackets). */
function usersOf(block: string): string {
  const start = block.indexOf('users = [')
  const end = block.lastIndexOf(']')
  if (start < 0 || end < start) throw new Error(`not an authorization block:\n${block}`)
  return block.slice(start + 'users = ['.length, end).trimEnd()
}

/** The user entry `signalbox nats permissions` prints for `name`'s roles and scope, logging in with `publicKey`. */
async function permissionsOf(name: UserName, publicKey: string): Promise<string> {
  const spec: UserSpec = USERS[name]
  const argv = ['nats', 'permissions', '--role', spec.roles.join(','), '--prefix', PREFIX, '--name', name]
  if (spec.roles.includes('agent')) {
    argv.push('--agent', (spec.agents ?? []).join(','), '--run-bucket', RUN_BUCKET)
    if (spec.children) argv.push('--child', spec.children.join(','))
  } else if (spec.agents) {
    argv.push('--agent', spec.agents.join(','))
  }
  argv.push('--nkey', publicKey)
  return usersOf(await must(argv))
}

export interface Deployment {
  readonly dir: string
  readonly cluster: NatsCluster
  /** Every node's client URL, comma-separated (what `--nats` takes). */
  readonly servers: string
  readonly users: Record<UserName, User>
  /** The trust policy every actor reads. */
  readonly trustFile: string
  /** The policy as written now (change it with `writeTrust`). */
  readonly trust: TrustFile
  writeTrust(trust: TrustFile): void
  /** Every key that was ever valid: what `audit --verify` checks the whole trail against. */
  readonly auditTrustFile: string
  readonly auditTrust: TrustFile
  /**
   * Gives `name` a second login (a rotated key) next to, or instead of (`replace`), its own:
   * the server configuration gets the entry `signalbox nats permissions` prints for it, and every
   * node reloads.
   */
  authorize(name: UserName, publicKey: string, options?: { replace?: boolean }): Promise<void>
  /** The generated server configuration (the authorization block), as written. */
  readonly authorization: string
  /** A file in the deployment's directory. */
  file(name: string): string
  /** Starts `signalbox <args>` as `user` (its nkey and least-privilege flags appended). */
  start(user: UserName, args: string[], options?: { name?: string; env?: NodeJS.ProcessEnv; stdin?: 'pipe' }): CliProcess
  /** A bus as the operator's superuser (provisioning, forging), never used by an actor. */
  admin(): Promise<NatsBus>
  /** The permission violations every node has logged, across restarts. */
  violations(): PermissionViolation[]
  dispose(): Promise<void>
}

export async function startDeployment(): Promise<Deployment> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-production-'))
  const file = (name: string) => path.join(dir, name)
  const cleanups: (() => unknown)[] = [() => rm(dir, { recursive: true, force: true })]

  // Keys: one nkey per process, made as an operator would (`signalbox keys gen --out`).
  const names = Object.keys(USERS) as UserName[]
  const publicKeys = {} as Record<UserName, string>
  for (const name of names) {
    const printed = await must(['keys', 'gen', '--out', file(`${name}.nk`), '--json'])
    publicKeys[name] = (JSON.parse(printed) as { publicKey: string }).publicKey
  }

  // Permissions: `signalbox nats permissions` for each user, merged into one block.
  const entries = new Map<string, string>()
  for (const name of names) entries.set(name, await permissionsOf(name, publicKeys[name]))
  const block = () =>
    [
      'authorization {',
      '  users = [',
      `    { user: ${ADMIN.user}, password: ${ADMIN.pass} }`,
      ...entries.values(),
      '  ]',
      '}',
    ].join('\n')
  const authorization = block()
  writeFileSync(file('authorization.conf'), authorization)

  // One trust policy: who may decide, answer, steer and cancel, and which keys are the agents'.
  const k = publicKeys
  let trust: TrustFile = {
    keys: {
      [k.tina]: 'tina',
      [k.rita]: 'rita',
      [k.sam]: 'sam',
      [k.ana]: 'ana',
      [k.ops]: 'ops',
      [k.hosta]: 'host a',
      [k.hostb]: 'host b',
      [k.hostc]: 'host c',
      [k.desk]: 'front desk',
    },
    reviewers: {
      book_hotel: [k.tina, k.rita],
      drop_claw: [k.sam],
      delete_record: [k.sam],
    },
    answerers: [k.ana, k.sam, k.tina, k.rita],
    steerers: [k.ops, k.sam],
    controllers: [k.ops, k.sam, k.hosta, k.desk],
    agents: { '*': [k.hosta, k.hostb, k.hostc] },
  }
  const trustFile = file('trust.json')
  writeFileSync(trustFile, JSON.stringify(trust, null, 2))
  // What an auditor verifies the trail against: every key that was ever valid (a rotation adds to it).
  const auditTrust = structuredClone(trust)
  const auditTrustFile = file('audit-trust.json')
  writeFileSync(auditTrustFile, JSON.stringify(auditTrust, null, 2))

  const cluster = await startNatsCluster({ config: authorization, probeLogin: ADMIN, startTimeoutMs: 30_000 })
  cleanups.push(() => cluster.dispose())
  const servers = cluster.urls.join(',')

  const admin = async () => {
    const bus = await connectNatsBus({
      servers: cluster.urls,
      prefix: PREFIX,
      user: ADMIN.user,
      pass: ADMIN.pass,
      name: 'operator',
      durable: { replicas: 3 },
    })
    cleanups.push(() => bus.close())
    return bus
  }
  // The operator makes the stream with three replicas before anything starts: every role but the
  // agents' only checks it (`--stream-access check`). The buckets are the processes' own: the
  // hosts' `--replicas 3` makes the run bucket and the directory's, the tool hosts' the ledger of
  // used approvals.
  await admin()

  const users = {} as Record<UserName, User>
  for (const name of names) {
    const spec: UserSpec = USERS[name]
    users[name] = {
      name,
      publicKey: publicKeys[name],
      seedFile: file(`${name}.nk`),
      flags: [
        ...['--nats', servers, '--prefix', PREFIX, '--nkey', file(`${name}.nk`)],
        ...['--inbox-prefix', `_INBOX.${name}`, '--consumer-prefix', name],
        ...(spec.roles.includes('agent') ? [] : ['--stream-access', 'check']),
      ],
    }
  }

  return {
    dir,
    cluster,
    servers,
    users,
    trustFile,
    get trust() {
      return trust
    },
    writeTrust(next) {
      trust = next
      writeFileSync(trustFile, JSON.stringify(next, null, 2))
      for (const [key, label] of Object.entries(next.keys)) auditTrust.keys[key] = label
      for (const [tool, keys] of Object.entries(next.reviewers))
        auditTrust.reviewers[tool] = [...new Set([...(auditTrust.reviewers[tool] ?? []), ...keys])]
      auditTrust.answerers = [...new Set([...auditTrust.answerers, ...next.answerers])]
      writeFileSync(auditTrustFile, JSON.stringify(auditTrust, null, 2))
    },
    auditTrustFile,
    auditTrust,
    async authorize(name, publicKey, options = {}) {
      const entry = await permissionsOf(name, publicKey)
      if (options.replace) entries.set(name, entry)
      else entries.set(`${name} ${publicKey}`, entry)
      if (options.replace) for (const label of [...entries.keys()]) if (label.startsWith(`${name} `)) entries.delete(label)
      await cluster.reconfigure(block())
    },
    authorization,
    file,
    start(user, args, options = {}) {
      return startProcess([...args, ...users[user].flags], {
        name: options.name ?? `${user} ${args[0]}`,
        ...(options.env ? { env: options.env } : {}),
        ...(options.stdin ? { stdin: options.stdin } : {}),
      })
    },
    admin,
    violations: () => cluster.nodes.flatMap((node) => parseViolations(node.log())),
    async dispose() {
      for (const cleanup of cleanups.splice(0).reverse()) {
        try {
          await cleanup()
        } catch {
          // best effort
        }
      }
    },
  }
}

/** Reads a JSON-lines file (the tools' ledgers of side effects); empty when it does not exist yet. */
export function readLines<T>(file: string): T[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as T)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
    throw error
  }
}
