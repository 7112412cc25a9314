/**
 * Least privilege on NATS: for each role, exactly the subjects it publishes and subscribes to,
 * including the JetStream API, acks and its own inbox, and the nats-server `authorization` block
 * that grants them (docs/security.md is generated from the same rules). Consumers are named
 * `<name>_<purpose>` (and the shared groups `reviewers` / `answerers`), so permissions can name
 * them: nobody can pull from, or delete, another role's consumer.
 */

import { defaultStreamName } from '@signalbox/actors/nats'
import { ErrorCode, SignalboxError } from '@signalbox/core'
import { createSubjects, DEFAULT_SUBJECT_PREFIX } from '@signalbox/core/bus'
import { assertToken, encodeEventType } from '@signalbox/core/internal'

export const ROLES = ['agent', 'reviewer', 'answerer', 'steering', 'tool-host', 'observer', 'console'] as const
export type Role = (typeof ROLES)[number]

export interface PermissionScope {
  /** Subject prefix of the deployment. Default `signalbox.v1`. */
  prefix?: string
  /** JetStream stream. Default: the bus's stream for the prefix. */
  stream?: string
  /** The agent this user is (agent role; required) or may act on (others). Default `*`: every agent. */
  agent?: string
  /** Tools a tool host serves. Default `*`. */
  tool?: string
  /** This user's name: its inbox is `_INBOX.<name>`, its consumers `<name>_<purpose>`. Default: the agent id, else the role. */
  name?: string
  /** Shared consumer group of reviewers / answerers. Default `reviewers` / `answerers` (the console has none: it sees everything). */
  group?: string
}

export interface PermissionRule {
  subject: string
  /** Why the role needs it (the doc's table). */
  why: string
}

export interface RolePermissions {
  role: Role
  name: string
  /** The `inboxPrefix` the role's client must use. */
  inboxPrefix: string
  /** Consumer names the role may create, read, pull from and ack. */
  consumers: string[]
  publish: PermissionRule[]
  subscribe: PermissionRule[]
  /** Subjects denied even if an allow rule would match (defence in depth). */
  deny: PermissionRule[]
  /** Lets the role answer requests it received (control, tool calls) without publishing to inboxes. */
  allowResponses: boolean
}

export class PermissionScopeError extends SignalboxError {
  constructor(message: string) {
    super(ErrorCode.PERMISSION_SCOPE_INVALID, message, { fault: 'user' })
  }
}

interface Consumer {
  name: string
  filter: string
  why: string
  /** Private consumers are deleted by their owner at shutdown; shared (durable) ones never. */
  shared?: boolean
}

/** The permissions of one role, built from the subject layout and the bus's JetStream use. */
export function rolePermissions(role: Role, scope: PermissionScope = {}): RolePermissions {
  if (!ROLES.includes(role)) throw new PermissionScopeError(`unknown role "${role}" (one of ${ROLES.join(', ')})`)
  const prefix = scope.prefix ?? DEFAULT_SUBJECT_PREFIX
  const subjects = createSubjects(prefix)
  const stream = scope.stream ?? defaultStreamName(prefix)
  const agent = scope.agent ?? '*'
  const tool = scope.tool ?? '*'
  if (role === 'agent' && agent === '*')
    throw new PermissionScopeError('the agent role needs --agent <id>: an agent user is one agent')
  const name = scope.name ?? (role === 'agent' ? agent : role.replace('-', ''))
  for (const token of [agent, tool, name, stream]) if (token !== '*') assertToken(token)
  const P = subjects.prefix
  const approvals = `${P}.approvals.${agent}`
  const decisions = `${approvals}.decisions`
  const ask = `${P}.ask.${agent}`
  const answers = `${ask}.answers`
  const steer = `${P}.agents.${agent}.steer`
  const control = `${P}.agents.${agent}.control`
  const events = `${P}.agents.${agent}.events.>`
  const audit = agent === '*' ? `${P}.audit.>` : `${P}.audit.${agent}.>`

  const publish: PermissionRule[] = []
  const subscribe: PermissionRule[] = []
  const deny: PermissionRule[] = []
  const consumers: Consumer[] = []
  let allowResponses = false
  // A reviewer or answerer shares a durable group; the console sees every request (a private consumer).
  const reviews = (group: string | undefined) => {
    publish.push({ subject: decisions, why: 'decisions (durable publish)' })
    consumers.push(
      group !== undefined
        ? { name: group, filter: approvals, why: 'approval requests, shared by the reviewer group', shared: true }
        : { name: `${name}_approvals`, filter: approvals, why: 'every approval request' },
      { name: `${name}_decided`, filter: decisions, why: 'decisions already made (skip what others decided)' },
    )
  }
  // Answerers watch every question by default (broadcast: a room of people, the first answer
  // counts), on a private consumer; with a group they may also split them (shared mode).
  const answersQuestions = (group: string | undefined) => {
    publish.push({ subject: answers, why: 'answers (durable publish)' })
    consumers.push(
      {
        name: `${name}_questions`,
        filter: ask,
        why: group !== undefined ? 'every question (broadcast mode, the default)' : 'every question',
      },
      ...(group !== undefined
        ? [{ name: group, filter: ask, why: 'questions, shared by the answerer group (shared mode)', shared: true }]
        : []),
      { name: `${name}_answered`, filter: answers, why: 'questions already answered' },
    )
  }
  const steers = () => {
    publish.push(
      { subject: steer, why: 'steering (durable publish)' },
      { subject: control, why: 'cancel and status requests (replies come to the inbox)' },
    )
  }
  const observes = () => {
    subscribe.push({ subject: events, why: 'agent events (observe only)' })
    consumers.push({ name: `${name}_audit`, filter: audit, why: 'reading the audit trail' })
  }

  switch (role) {
    case 'agent':
      publish.push(
        { subject: approvals, why: 'approval requests (durable publish)' },
        { subject: ask, why: 'questions to a human (durable publish)' },
        { subject: events, why: 'its events' },
        { subject: `${P}.audit.${agent}.>`, why: 'its audit entries (durable publish)' },
        { subject: `${P}.tools.${tool}`, why: 'tool calls (requests)' },
        { subject: `${P}.tools.${tool}.describe`, why: 'remote tool descriptions (requests)' },
        { subject: `${P}.tools`, why: 'what the tool hosts serve (request to every host)' },
        { subject: `${P}.errors.*`, why: 'rejections nobody could be told about' },
      )
      subscribe.push({ subject: control, why: 'cancel and status requests (answered through allow_responses)' })
      consumers.push(
        { name: `${name}_decisions`, filter: decisions, why: 'decisions on its approval requests' },
        { name: `${name}_answers`, filter: answers, why: 'answers to its questions' },
        { name: `${name}_steer`, filter: steer, why: 'steering (durable)' },
      )
      deny.push(
        { subject: `${P}.approvals.*.decisions`, why: 'an agent never decides its own calls' },
        { subject: `${P}.ask.*.answers`, why: 'nor answers its own questions' },
      )
      allowResponses = true
      break
    case 'reviewer':
      reviews(scope.group ?? 'reviewers')
      publish.push({ subject: `${P}.errors.*`, why: 'rejections nobody could be told about' })
      break
    case 'answerer':
      answersQuestions(scope.group ?? 'answerers')
      publish.push({ subject: `${P}.errors.*`, why: 'rejections nobody could be told about' })
      break
    case 'steering':
      steers()
      break
    case 'tool-host':
      subscribe.push(
        { subject: `${P}.tools.${tool}`, why: 'tool calls (queue group signalbox-tools), answered through allow_responses' },
        { subject: `${P}.tools.${tool}.describe`, why: 'description requests' },
        { subject: `${P}.tools`, why: 'tool list requests (every host answers, through allow_responses)' },
      )
      publish.push(
        { subject: `${P}.errors.*`, why: 'rejections nobody could be told about' },
        {
          subject: `${P}.audit.${agent}.${encodeEventType('tool.refused')}`,
          why: 'calls refused for want of a valid approval (a host that verifies approvals; durable publish)',
        },
      )
      allowResponses = true
      break
    case 'observer':
      observes()
      break
    case 'console':
      reviews(undefined)
      answersQuestions(undefined)
      steers()
      observes()
      break
  }

  const inboxPrefix = `_INBOX.${name}`
  subscribe.push({ subject: `${inboxPrefix}.>`, why: 'its own inbox: replies, JetStream API answers, pulled messages' })
  publish.push(
    { subject: '$JS.API.INFO', why: 'JetStream account check' },
    { subject: `$JS.API.STREAM.INFO.${stream}`, why: 'the stream exists and captures the right subjects' },
  )
  if (role === 'agent') {
    publish.push(
      { subject: `$JS.API.STREAM.CREATE.${stream}`, why: 'creates the stream if it is missing' },
      { subject: `$JS.API.STREAM.UPDATE.${stream}`, why: 'adds missing subjects to the stream' },
    )
  }
  for (const consumer of consumers) {
    publish.push(
      {
        subject: `$JS.API.CONSUMER.CREATE.${stream}.${consumer.name}.${consumer.filter}`,
        why: `consumer ${consumer.name}: ${consumer.why}`,
      },
      { subject: `$JS.API.CONSUMER.INFO.${stream}.${consumer.name}`, why: `consumer ${consumer.name}: state` },
      { subject: `$JS.API.CONSUMER.MSG.NEXT.${stream}.${consumer.name}`, why: `consumer ${consumer.name}: pull` },
      { subject: `$JS.ACK.${stream}.${consumer.name}.>`, why: `consumer ${consumer.name}: acks` },
    )
    if (!consumer.shared) {
      publish.push({
        subject: `$JS.API.CONSUMER.DELETE.${stream}.${consumer.name}`,
        why: `consumer ${consumer.name}: removed at shutdown`,
      })
    }
  }
  return { role, name, inboxPrefix, consumers: consumers.map((c) => c.name), publish, subscribe, deny, allowResponses }
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
