/**
 * Least privilege on NATS: for each role, exactly the subjects it publishes and subscribes to,
 * including the JetStream API, acks and its own inbox, and the nats-server `authorization` block
 * that grants them (docs/security.md is generated from the same rules). Nothing here names a
 * subject: every grant comes from the subject families (`SUBJECT_FAMILIES`, `KV_BUCKETS` in
 * `@signalbox/core/bus`), which the code builds its subjects and consumers from. Consumers are
 * named `<name>_<purpose>` (and the shared groups `reviewers` / `answerers`), so permissions can
 * name them: nobody can pull from, or delete, another role's consumer.
 */

import { defaultStreamName } from '@signalbox/actors/nats'
import { ErrorCode, SignalboxError } from '@signalbox/core'
import {
  type BucketAccess,
  type ConsumerUse,
  createSubjects,
  DEFAULT_RUN_BUCKET,
  DEFAULT_SUBJECT_PREFIX,
  directoryBucket,
  KV_BUCKETS,
  type KvBucketName,
  type KvBucketUse,
  ROLES,
  type Role,
  SUBJECT_FAMILIES,
  type SubjectFamily,
  type SubjectFamilyName,
  type SubjectUse,
  usedApprovalsBucket,
} from '@signalbox/core/bus'
import { agentPurpose, assertToken } from '@signalbox/core/internal'

export { ROLES, type Role }

export interface PermissionScope {
  /** Subject prefix of the deployment. Default `signalbox.v1`. */
  prefix?: string
  /** JetStream stream. Default: the bus's stream for the prefix. */
  stream?: string
  /**
   * The agent this user is (agent role; required), or the agents (a host serving several on one
   * connection: give `name` too); for the other roles the agent they may act on. Default `*`: every agent.
   */
  agent?: string | readonly string[]
  /**
   * Agent role: the agents it delegates to (starts runs of, cancels). Default none: a parent agent
   * lists its children (`signalbox nats permissions --child <id>`); `['*']`: any agent.
   */
  children?: readonly string[]
  /** Tools a tool host serves. Default `*`. */
  tool?: string
  /** This user's name: its inbox is `_INBOX.<name>`, its consumers `<name>_<purpose>`. Default: the agent id, else the role. */
  name?: string
  /**
   * Shared consumer group of reviewers / answerers. Default `reviewers` / `answerers`, with `-<agent>`
   * when the scope is one agent (as `signalbox review --agent` names them).
   */
  group?: string
  /** The run store's KV bucket (`--run-bucket`). Default `signalbox_runs`. */
  runBucket?: string
  /** The directory's KV bucket. Default: the prefix's (`directoryBucket(prefix)`). */
  directoryBucket?: string
  /** The enforcing tool hosts' ledger of used approvals. Default: the prefix's (`usedApprovalsBucket(prefix)`). */
  usedApprovalsBucket?: string
}

export interface PermissionRule {
  subject: string
  /** Why the role needs it (the doc's table). */
  why: string
}

export interface RolePermissions {
  /** The role, or the roles joined with `+` when the user has several. */
  role: string
  roles: Role[]
  name: string
  /** The `inboxPrefix` the role's client must use. */
  inboxPrefix: string
  /** Consumer names the role may create, read, pull from and ack. */
  consumers: string[]
  publish: PermissionRule[]
  subscribe: PermissionRule[]
  /** Subjects denied even if an allow rule would match (defence in depth). */
  deny: PermissionRule[]
  /** Lets the role answer requests it received (control, tool calls, runs) without publishing to inboxes. */
  allowResponses: boolean
}

export class PermissionScopeError extends SignalboxError {
  constructor(message: string) {
    super(ErrorCode.PERMISSION_SCOPE_INVALID, message, { fault: 'user' })
  }
}

/** The roles that create the stream (and add missing subjects to it); the others only check it. */
const STREAM_MANAGERS: readonly Role[] = ['agent']

interface Consumer {
  name: string
  filter: string
  why: string
  /** Private consumers are deleted by their owner at shutdown; shared (durable) ones never. */
  shared: boolean
}

/** The permissions of one role (or of a user with several), built from the subject families. */
export function rolePermissions(role: Role | readonly Role[], scope: PermissionScope = {}): RolePermissions {
  const roles = [...new Set(typeof role === 'string' ? [role] : role)]
  if (roles.length === 0) throw new PermissionScopeError(`no role given (one of ${ROLES.join(', ')})`)
  for (const r of roles) {
    if (!ROLES.includes(r)) throw new PermissionScopeError(`unknown role "${r}" (one of ${ROLES.join(', ')})`)
  }
  const prefix = scope.prefix ?? DEFAULT_SUBJECT_PREFIX
  const subjects = createSubjects(prefix)
  const stream = scope.stream ?? defaultStreamName(prefix)
  const agents = scope.agent === undefined ? ['*'] : typeof scope.agent === 'string' ? [scope.agent] : [...scope.agent]
  const [agent = '*'] = agents
  const tool = scope.tool ?? '*'
  const children = scope.children ?? []
  const isAgent = roles.includes('agent')
  if (isAgent && (agents.length === 0 || agents.includes('*')))
    throw new PermissionScopeError('the agent role needs --agent <id>: the agent (or agents) the user is')
  if (!isAgent && agents.length > 1) throw new PermissionScopeError('several agents are for the agent role (a host)')
  if (agents.length > 1 && scope.name === undefined)
    throw new PermissionScopeError('a user of several agents needs --name (its inbox and consumer names)')
  if (children.length > 0 && !isAgent) throw new PermissionScopeError('--child is for the agent role')
  const name = scope.name ?? (isAgent ? agent : (roles[0] as Role).replace('-', ''))
  for (const token of [...agents, tool, name, stream, ...children]) if (token !== '*') assertToken(token)

  /** The subjects of `family` for a use: the scope's agents (or its children) and tool, every other token open. */
  const agentsOf = (family: SubjectFamilyName, use: SubjectUse): readonly string[] =>
    !SUBJECT_FAMILIES[family].template.includes('{agent') ? ['*'] : use.agents === 'children' ? children : agents
  const subjectFor = (family: SubjectFamilyName, use: SubjectUse, a: string): string =>
    subjects.pattern(family, {
      ...(a === '*' ? {} : { agent: a }),
      ...(tool === '*' ? {} : { tool }),
      ...use.tokens,
    })
  const subjectsOf = (family: SubjectFamilyName, use: SubjectUse): string[] =>
    agentsOf(family, use).map((a) => subjectFor(family, use, a))
  /** A parent's uses (delegation) exist only for an agent that has children. */
  const applies = (use: SubjectUse) => use.agents !== 'children' || children.length > 0

  const publish: PermissionRule[] = []
  const subscribe: PermissionRule[] = []
  const deny: PermissionRule[] = []
  const consumers: Consumer[] = []
  const reads: PermissionRule[] = []
  let allowResponses = false
  for (const [familyName, family] of Object.entries(SUBJECT_FAMILIES) as [SubjectFamilyName, SubjectFamily][]) {
    for (const r of roles) {
      const published = family.publish?.[r]
      if (published && applies(published)) {
        for (const subject of subjectsOf(familyName, published)) publish.push({ subject, why: published.why })
      }
      const subscribed = family.subscribe?.[r]
      if (subscribed && applies(subscribed)) {
        for (const subject of subjectsOf(familyName, subscribed)) subscribe.push({ subject, why: subscribed.why })
        if (family.transport === 'request') allowResponses = true
      }
      const read = family.read?.[r]
      if (read && applies(read)) {
        for (const subject of subjectsOf(familyName, read)) reads.push({ subject, why: read.why })
      }
      const denied = family.deny?.[r]
      if (denied) deny.push({ subject: subjects.pattern(familyName), why: denied.why })
      for (const use of family.consume?.[r] ?? []) {
        if (!applies(use)) continue
        // One consumer per agent when the code keeps one per agent, else one on the scope's subject.
        const owners = use.perAgent ? agentsOf(familyName, use) : [agentsOf(familyName, use)[0] ?? '*']
        for (const owner of owners) {
          consumers.push({
            name: consumerName(use, name, owner, scope.group),
            filter: subjectFor(familyName, use, owner),
            why: use.why,
            shared: use.group !== undefined,
          })
        }
      }
    }
  }

  const inboxPrefix = `_INBOX.${name}`
  subscribe.push({ subject: `${inboxPrefix}.>`, why: 'its own inbox: replies, JetStream API answers, pulled messages' })
  publish.push(
    { subject: '$JS.API.INFO', why: 'JetStream account check' },
    { subject: `$JS.API.STREAM.INFO.${stream}`, why: 'the stream exists and captures the right subjects' },
  )
  if (roles.some((r) => STREAM_MANAGERS.includes(r))) {
    publish.push(
      { subject: `$JS.API.STREAM.CREATE.${stream}`, why: 'creates the stream if it is missing' },
      { subject: `$JS.API.STREAM.UPDATE.${stream}`, why: 'adds missing subjects to the stream' },
    )
  }
  for (const { subject, why } of reads) {
    publish.push({ subject: `$JS.API.DIRECT.GET.${stream}.${subject}`, why: `reads ${subject}: ${why}` })
  }
  const seen = new Set<string>()
  for (const consumer of consumers) {
    if (seen.has(`${consumer.name} ${consumer.filter}`)) continue
    seen.add(`${consumer.name} ${consumer.filter}`)
    publish.push(...consumerRules(stream, consumer))
  }
  const buckets: Record<KvBucketName, string> = {
    runs: scope.runBucket ?? DEFAULT_RUN_BUCKET,
    directory: scope.directoryBucket ?? directoryBucket(prefix),
    usedApprovals: scope.usedApprovalsBucket ?? usedApprovalsBucket(prefix),
  }
  for (const [bucketName, bucket] of Object.entries(KV_BUCKETS) as [KvBucketName, (typeof KV_BUCKETS)[KvBucketName]][]) {
    const access = roles.map((r) => (bucket.access as Partial<Record<Role, BucketAccess>>)[r]).filter(Boolean)
    if (access.length === 0) continue
    const purge = (bucket as KvBucketUse).purge
    publish.push(...bucketRules(buckets[bucketName], bucket.holds, access.includes('write') ? 'write' : 'read', purge))
  }
  return {
    role: roles.join('+'),
    roles,
    name,
    inboxPrefix,
    consumers: [...new Set(consumers.map((c) => c.name))],
    publish: unique(publish),
    subscribe: unique(subscribe),
    deny: unique(deny),
    allowResponses,
  }
}

function consumerName(use: ConsumerUse, name: string, agent: string, group: string | undefined): string {
  const purpose = use.purpose ?? 'private'
  if (use.group === undefined) return `${name}_${use.perAgent ? agentPurpose(purpose, agent) : purpose}`
  return group ?? (agent === '*' ? use.group : `${use.group}-${agent}`)
}

function consumerRules(stream: string, consumer: Consumer): PermissionRule[] {
  const { name, filter, why } = consumer
  const rules: PermissionRule[] = [
    { subject: `$JS.API.CONSUMER.CREATE.${stream}.${name}.${filter}`, why: `consumer ${name}: ${why}` },
    { subject: `$JS.API.CONSUMER.INFO.${stream}.${name}`, why: `consumer ${name}: state` },
    { subject: `$JS.API.CONSUMER.MSG.NEXT.${stream}.${name}`, why: `consumer ${name}: pull` },
    { subject: `$JS.ACK.${stream}.${name}.>`, why: `consumer ${name}: acks` },
  ]
  if (!consumer.shared) {
    rules.push({ subject: `$JS.API.CONSUMER.DELETE.${stream}.${name}`, why: `consumer ${name}: removed at shutdown` })
  }
  return rules
}

/**
 * A KV bucket is a stream of its own (`KV_<bucket>`) holding nothing else: the grants name it,
 * and within it the consumers nats.js makes for lists and watches (ordered, named by the client).
 */
function bucketRules(bucket: string, holds: string, access: BucketAccess, purge: string | undefined): PermissionRule[] {
  const kv = `KV_${bucket}`
  const why = `KV bucket ${bucket} (${holds})`
  const rules: PermissionRule[] = [
    { subject: `$JS.API.STREAM.INFO.${kv}`, why: `${why}: opens it` },
    { subject: `$JS.API.DIRECT.GET.${kv}.>`, why: `${why}: reads a key` },
    { subject: `$JS.API.STREAM.MSG.GET.${kv}`, why: `${why}: reads a key (servers without direct get)` },
    { subject: `$JS.API.CONSUMER.CREATE.${kv}.>`, why: `${why}: lists and watches keys` },
    { subject: `$JS.API.CONSUMER.DELETE.${kv}.>`, why: `${why}: ends a list or watch` },
    { subject: `$JS.FC.${kv}.>`, why: `${why}: flow control of a watch` },
  ]
  if (access === 'write') {
    rules.push(
      { subject: `$KV.${bucket}.>`, why: `${why}: writes and deletes keys` },
      { subject: `$JS.API.STREAM.CREATE.${kv}`, why: `${why}: creates it if it is missing` },
      { subject: `$JS.API.STREAM.UPDATE.${kv}`, why: `${why}: its settings (replicas, history, age)` },
    )
    if (purge !== undefined) rules.push({ subject: `$JS.API.STREAM.PURGE.${kv}`, why: `${why}: ${purge}` })
  }
  return rules
}

function unique(rules: PermissionRule[]): PermissionRule[] {
  const seen = new Set<string>()
  return rules.filter((rule) => {
    if (seen.has(rule.subject)) return false
    seen.add(rule.subject)
    return true
  })
}

/** A user's login in the generated block: user and password (a variable, never a literal secret) or an nkey. */
export type UserLogin = { user: string; password: string } | { nkey: string }

const quote = (text: string) => JSON.stringify(text)
const list = (rules: PermissionRule[]) => `[${[...new Set(rules.map((r) => r.subject))].map(quote).join(', ')}]`

/** One entry of `authorization.users` for `permissions`. */
export function userEntry(login: UserLogin, permissions: RolePermissions): string {
  const who =
    'nkey' in login
      ? `nkey: ${quote(login.nkey)}`
      : // `$NAME` is a nats-server config variable (or environment variable): the secret stays out of the file.
        `user: ${quote(login.user)}, password: ${login.password.startsWith('$') ? login.password : quote(login.password)}`
  const lines = [
    `    # ${permissions.role} "${permissions.name}": inbox prefix ${permissions.inboxPrefix}, consumers ${permissions.consumers.join(', ') || '(none)'}`,
    `    { ${who}, permissions: {`,
    `      publish: { allow: ${list(permissions.publish)}${permissions.deny.length > 0 ? `, deny: ${list(permissions.deny)}` : ''} }`,
    `      subscribe: { allow: ${list(permissions.subscribe)} }`,
  ]
  if (permissions.allowResponses) lines.push('      allow_responses: true')
  lines.push('    } }')
  return lines.join('\n')
}

/** The nats-server `authorization` block for these users. */
export function authorizationBlock(users: { login: UserLogin; permissions: RolePermissions }[]): string {
  return ['authorization {', '  users = [', ...users.map((u) => userEntry(u.login, u.permissions)), '  ]', '}'].join('\n')
}

/** A markdown table of a role's permissions (docs/security.md is made of these). */
export function permissionsTable(permissions: RolePermissions): string {
  const rows = [
    ...permissions.publish.map((r) => ['publish', r.subject, r.why]),
    ...permissions.deny.map((r) => ['deny publish', r.subject, r.why]),
    ...permissions.subscribe.map((r) => ['subscribe', r.subject, r.why]),
  ]
  if (permissions.allowResponses) rows.push(['allow_responses', 'true', 'replies to requests it received'])
  return ['| action | subject | why |', '|---|---|---|', ...rows.map(([a, s, w]) => `| ${a} | \`${s}\` | ${w} |`)].join('\n')
}
