/**
 * The one place subjects are built, from the templates of `subject-families.ts` (which also say who
 * uses each, for the permissions). Every variable part (agent id, tool name, event type...) is a
 * single token checked by `assertToken`, so an id can never inject a `.`, `*` or `>` and widen a
 * subscription or land on somebody else's subject; a wildcard is only ever made by leaving a token
 * out of `pattern(...)`.
 *
 * Layout (prefix `signalbox.v1`):
 *   <prefix>.approvals.<agent>             approval requests
 *   <prefix>.approvals.<agent>.decisions   decisions on them
 *   <prefix>.approvals.<agent>.withdrawn   requests the agent no longer waits for
 *   <prefix>.ask.<agent>                   questions to a human
 *   <prefix>.ask.<agent>.answers           their answers
 *   <prefix>.ask.<agent>.withdrawn         questions the agent no longer waits for
 *   <prefix>.agents.<agent>.steer          steering
 *   <prefix>.agents.<agent>.alive          heartbeats of pending approval requests
 *   <prefix>.agents.<agent>.control        cancel / status (request/reply)
 *   <prefix>.agents.<agent>.events.<type>  observe-only events (`tool.end` → `tool_end`)
 *   <prefix>.tools.<tool>                  tool calls (request/reply, queue group of workers)
 *   <prefix>.agents.<agent>.run            start a run on one of the agent's hosts (request/reply)
 *   <prefix>.runs.<runId>.result           how a remote run ended (durable)
 *   <prefix>.heartbeats.<runId>            a parent's heartbeats for its remote child
 *   <prefix>.tools.<tool>.describe         a remote tool's description (request/reply)
 *   <prefix>.tools                         what the tool hosts serve (request-many, every host answers)
 *   <prefix>.audit.<agent>.<kind>          audit trail
 *   <prefix>.errors.<component>            rejected messages nobody could be told about
 *   <prefix>.inspect.<runtime>             inspection relay
 *   <prefix>.directory                     who is on the bus
 */
import { InvalidSubjectError } from './errors.ts'
import { SUBJECT_FAMILIES, type SubjectFamilyName, type SubjectToken } from './subject-families.ts'

export const DEFAULT_SUBJECT_PREFIX = 'signalbox.v1'
export const MAX_TOKEN_LENGTH = 128

const ILLEGAL_TOKEN_CHAR = /[.*>\s]/

/** Throws `InvalidSubjectError` unless `token` is usable as one literal subject token. */
export function assertToken(token: string): string {
  if (typeof token !== 'string' || token.length === 0) throw new InvalidSubjectError(String(token), 'a token must not be empty')
  if (token.length > MAX_TOKEN_LENGTH) {
    throw new InvalidSubjectError(token, `a token must be at most ${MAX_TOKEN_LENGTH} characters`)
  }
  const illegal = ILLEGAL_TOKEN_CHAR.exec(token)
  if (illegal) throw new InvalidSubjectError(token, `a token must not contain ${JSON.stringify(illegal[0])}`)
  return token
}

// One regex per check keeps validation cheap on the publish path (no split, no allocation).
const LITERAL_SUBJECT = /^[^\s.*>]+(?:\.[^\s.*>]+)*$/
const PATTERN_SUBJECT = /^(?:(?:[^\s.*>]+|\*)\.)*(?:[^\s.*>]+|\*|>)$/

/** A subject a message can be published to: non-empty tokens, no wildcards, no whitespace. */
export function assertPublishSubject(subject: string): string {
  if (typeof subject !== 'string' || !LITERAL_SUBJECT.test(subject)) {
    throw new InvalidSubjectError(String(subject), 'not a publishable subject (empty token, wildcard or whitespace)')
  }
  return subject
}

/** A subject a subscription can listen on: like a publish subject, plus whole-token `*` and a final `>`. */
export function assertSubscribeSubject(subject: string): string {
  if (typeof subject !== 'string' || !PATTERN_SUBJECT.test(subject)) {
    throw new InvalidSubjectError(
      String(subject),
      'not a subscribable subject (empty token, whitespace, or a wildcard that is not a whole token / `>` not last)',
    )
  }
  return subject
}

/** Event types are dotted (`tool.end`); a dot would split the token, so it becomes `_`. */
export function encodeEventType(type: string): string {
  return assertToken(type.replaceAll('.', '_'))
}

/**
 * NATS wildcard matching of a literal `subject` against `pattern`:
 * `*` matches exactly one token, `>` (last) matches one or more remaining tokens.
 */
export function subjectMatches(pattern: string, subject: string): boolean {
  if (pattern === subject) return true
  return tokensMatch(pattern.split('.'), subject.split('.'))
}

/** `subjectMatches` on pre-split tokens (the in-process bus splits each pattern once). */
export function tokensMatch(pattern: readonly string[], subject: readonly string[]): boolean {
  const n = pattern.length
  for (let i = 0; i < n; i++) {
    const p = pattern[i]
    if (p === '>') return subject.length > i
    if (i >= subject.length) return false
    if (p !== '*' && p !== subject[i]) return false
  }
  return subject.length === n
}

/**
 * True when every subject matched by `subject` (which may itself contain wildcards) is also
 * matched by `pattern`. Used to check that a durable filter falls inside the durable store.
 */
export function subjectCovers(pattern: string, subject: string): boolean {
  const pt = pattern.split('.')
  const st = subject.split('.')
  for (let i = 0; i < st.length; i++) {
    const p = pt[i]
    const s = st[i]
    if (p === undefined) return false
    if (p === '>') return true
    if (s === '>') return false
    if (p === '*') continue
    if (s === '*' || p !== s) return false
  }
  return pt.length === st.length
}

/** The subjects whose messages must survive restarts and reconnects (the default durable store). */
export function defaultDurableSubjects(prefix: string = DEFAULT_SUBJECT_PREFIX): string[] {
  return [`${prefix}.approvals.>`, `${prefix}.audit.>`, `${prefix}.agents.*.steer`, `${prefix}.ask.>`, `${prefix}.runs.>`]
}

/**
 * The builders that take an agent (or runtime) id build, without one, the wildcard over every
 * agent (`approvals()` → `<prefix>.approvals.*`): a subject to subscribe to, never to publish on.
 */
export interface Subjects {
  readonly prefix: string
  /** Approval requests for one agent, or every agent's. */
  approvals(agentId?: string): string
  /** Decisions on one agent's approval requests, or on every agent's. */
  approvalDecisions(agentId?: string): string
  /** One agent's approval requests it no longer waits for (withdrawn: a correction, a cancel), or every agent's. */
  approvalWithdrawals(agentId?: string): string
  /** Questions from one agent to a human, or from every agent. */
  ask(agentId?: string): string
  /** Answers to one agent's questions, or to every agent's. */
  answers(agentId?: string): string
  /** One agent's questions it no longer waits for (withdrawn: its run was cancelled or ended), or every agent's. */
  questionWithdrawals(agentId?: string): string
  steer(agentId: string): string
  /** Heartbeats of an agent's pending approval requests (agents without a run store), or of every agent's. */
  alive(agentId?: string): string
  control(agentId: string): string
  tool(toolName: string): string
  /** One event type of one agent (`tool.end` → `...events.tool_end`), or all of its events (`...events.>`). */
  events(agentId: string, type?: string): string
  /** Every event of every agent (subscribe only). */
  eventsAll(): string
  /** The audit trail: all of it, one agent's (`...audit.<agent>.>`), or one kind of one agent's. */
  audit(agentId?: string, kind?: string): string
  /** Start a run of an agent on one of its hosts (request/reply, queue group). */
  agentRun(agentId: string): string
  /** How a remote run ended (durable). */
  runResult(runId: string): string
  /** The parent's heartbeats for a remote child run (plain publish). */
  runHeartbeat(runId: string): string
  /** A remote tool's description (request/reply). */
  toolDescribe(toolName: string): string
  /** What the tool hosts serve: every host answers (request-many). */
  toolCatalog(): string
  /** Rejections of messages that had nobody to reply to, per component. */
  errors(component?: string): string
  /** The inspection relay of one runtime, or of every runtime. */
  inspect(runtimeId?: string): string
  directory(): string
  /**
   * A subscription pattern of one family: the tokens given are literal (checked like every id),
   * each one left out is `*` (optional ones with none given after them: `>`). `pattern('approvals')`
   * is every agent's requests, `pattern('approvals', { agent: 'claw' })` claw's only,
   * `pattern('audit', { kind: 'tool.refused' })` one kind of every agent's trail.
   */
  pattern(family: SubjectFamilyName, tokens?: Partial<Record<SubjectToken, string>>): string
}

/** Event types and audit kinds are dotted (`tool.end`): each is one token, its dots made `_`. */
const ENCODE: Partial<Record<SubjectToken, (value: string) => string>> = { type: encodeEventType, kind: encodeEventType }

/**
 * The subject of `family` under `prefix` with `tokens`. A required token left out is an error, or
 * with `wildcards` the token `*`; an optional one left out ends the subject with `>`.
 */
export function buildSubject(
  prefix: string,
  family: SubjectFamilyName,
  tokens: Partial<Record<SubjectToken, string | undefined>>,
  wildcards = false,
): string {
  const parts = [prefix]
  const template = SUBJECT_FAMILIES[family].template.split('.')
  for (const [index, part] of template.entries()) {
    const variable = /^\{(\w+)(\?)?\}$/.exec(part)
    if (variable === null) {
      parts.push(part)
      continue
    }
    const name = variable[1] as SubjectToken
    const value = tokens[name]
    if (value === undefined) {
      // Optional and nothing given after it: the rest of the subject.
      const later = template.slice(index + 1).some((next) => tokens[/^\{(\w+)/.exec(next)?.[1] as SubjectToken] !== undefined)
      if (variable[2] === '?' && !later) {
        parts.push('>')
        break
      }
      if (!wildcards) throw new InvalidSubjectError(String(value), `the ${name} of a ${family} subject is missing`)
      parts.push('*')
      continue
    }
    parts.push((ENCODE[name] ?? assertToken)(value))
  }
  return parts.join('.')
}

/** Builds the subject set for `prefix` (itself validated token by token). */
export function createSubjects(prefix: string = DEFAULT_SUBJECT_PREFIX): Subjects {
  for (const token of prefix.split('.')) assertToken(token)
  const build = (family: SubjectFamilyName, tokens: Partial<Record<SubjectToken, string | undefined>>) =>
    buildSubject(prefix, family, tokens)
  /** Without the id, the wildcard over every agent (or runtime): to subscribe to, never to publish on. */
  const any = (family: SubjectFamilyName, tokens: Partial<Record<SubjectToken, string | undefined>>) =>
    buildSubject(prefix, family, tokens, true)
  return {
    prefix,
    approvals: (agent) => any('approvals', { agent }),
    approvalDecisions: (agent) => any('approvalDecisions', { agent }),
    approvalWithdrawals: (agent) => any('approvalWithdrawals', { agent }),
    ask: (agent) => any('ask', { agent }),
    answers: (agent) => any('answers', { agent }),
    questionWithdrawals: (agent) => any('questionWithdrawals', { agent }),
    steer: (agent) => build('steer', { agent }),
    alive: (agent) => any('alive', { agent }),
    control: (agent) => build('control', { agent }),
    tool: (tool) => build('tool', { tool }),
    events: (agent, type) => build('events', { agent, type }),
    eventsAll: () => buildSubject(prefix, 'events', {}, true),
    // The kind of one agent's trail only: without the agent, it is the whole trail.
    audit: (agent, kind) => build('audit', agent === undefined ? {} : { agent, kind }),
    agentRun: (agent) => build('agentRun', { agent }),
    runResult: (run) => build('runResult', { run }),
    runHeartbeat: (run) => build('runHeartbeat', { run }),
    toolDescribe: (tool) => build('toolDescribe', { tool }),
    toolCatalog: () => build('toolCatalog', {}),
    errors: (component) => build('errors', { component }),
    inspect: (runtime) => any('inspect', { runtime }),
    directory: () => build('directory', {}),
    pattern: (family, tokens = {}) => buildSubject(prefix, family, tokens, true),
  }
}
