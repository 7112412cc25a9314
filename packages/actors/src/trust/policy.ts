/**
 * Who may decide what. A signature proves which key signed; the policy says whether that key may
 * approve this tool, answer, steer or cancel this agent, or (on the reviewer side) send requests as
 * this agent. The name shown for a decision comes from the policy, never from the message.
 */
import { SignalboxError } from '@signalbox/core'
import type { Signed } from './canonical.ts'
import { isValidPublicKey } from './keys.ts'
import { verifySignature } from './sign.ts'

export type Allowed = readonly string[]

export interface TrustPolicyOptions {
  /** Public nkey → the name shown for it (audit, console). Every key used below must be named here. */
  keys: Readonly<Record<string, string>>
  /**
   * Who may approve or deny calls: keys allowed for every tool, or per tool name. With a map, a
   * tool's own list replaces the `'*'` list; a tool in neither may not be approved by anyone.
   */
  reviewers?: Allowed | Readonly<Record<string, Allowed>>
  /** Who may answer the agent's questions. */
  answerers?: Allowed
  /** Who may steer the agent. */
  steerers?: Allowed
  /** Who may cancel the agent's runs (`control.cancel`): operators, and parent agents' keys. */
  controllers?: Allowed
  /** The agent's own public key: it never approves or answers for itself, even if listed. */
  ownKey?: string
  /** Reviewer side: agent id (or `'*'`) → the keys whose signed approval requests are real. */
  agents?: Readonly<Record<string, Allowed>>
  /**
   * Steering and cancels sent longer ago than this (by `sentAt`, against `TrustContext.now`) are
   * `stale`: a captured signed message cannot be replayed later. Default: not checked.
   */
  maxAgeMs?: number
}

export type TrustRejectionCode =
  | 'unsigned'
  | 'malformed'
  | 'bad-signature'
  | 'unknown-key'
  | 'key-not-allowed'
  | 'own-key'
  | 'wrong-agent'
  | 'stale'

export type TrustVerdict =
  | { ok: true; signer: string; name: string }
  | { ok: false; code: TrustRejectionCode; reason: string; signer?: string }

/** What a message is checked for: the tool a decision is about, the agent the receiver is. */
export interface TrustContext {
  /** The tool of the pending call (decisions). */
  toolName?: string
  /** The receiving agent (steer, control) or the agent a request claims to come from. */
  agentId?: string
  /** The receiver's clock (epoch ms), for `maxAgeMs`. */
  now?: number
}

export class TrustPolicyError extends SignalboxError {
  constructor(message: string) {
    super('TRUST_POLICY_INVALID', message, { fault: 'user' })
  }
}

export interface TrustPolicy {
  readonly options: TrustPolicyOptions
  /** The verdict on a signed message; `context` names the tool or agent it must be valid for. */
  check(message: Signed, context?: TrustContext): TrustVerdict
  /** The name shown for a key, or undefined when the policy does not know it. */
  nameOf(key: string): string | undefined
}

/** Validates the options (every key a real public nkey, every listed key named) and returns the policy. */
export function createTrustPolicy(options: TrustPolicyOptions): TrustPolicy {
  for (const [key, name] of Object.entries(options.keys)) {
    if (!isValidPublicKey(key)) throw new TrustPolicyError(`${JSON.stringify(key)} is not a public nkey`)
    if (typeof name !== 'string' || name.trim() === '') throw new TrustPolicyError(`the key ${key} needs a name`)
  }
  const lists: [string, Allowed][] = []
  const { reviewers } = options
  if (Array.isArray(reviewers)) lists.push(['reviewers', reviewers as Allowed])
  else if (reviewers) for (const [tool, keys] of Object.entries(reviewers)) lists.push([`reviewers.${tool}`, keys as Allowed])
  for (const role of ['answerers', 'steerers', 'controllers'] as const) {
    const keys = options[role]
    if (keys) lists.push([role, keys])
  }
  for (const [agent, keys] of Object.entries(options.agents ?? {})) lists.push([`agents.${agent}`, keys])
  for (const [where, keys] of lists) {
    for (const key of keys) {
      if (!Object.hasOwn(options.keys, key)) throw new TrustPolicyError(`${where} lists ${key}, which has no name in keys`)
    }
  }
  if (options.ownKey !== undefined && !isValidPublicKey(options.ownKey)) {
    throw new TrustPolicyError('ownKey is not a public nkey')
  }
  const nameOf = (key: string) => (Object.hasOwn(options.keys, key) ? options.keys[key] : undefined)
  return { options, nameOf, check: (message, context = {}) => check(options, nameOf, message, context) }
}

function allowedFor(options: TrustPolicyOptions, message: Signed, context: TrustContext): Allowed | undefined {
  switch (message.type) {
    case 'approval.decision': {
      const { reviewers } = options
      if (reviewers === undefined || Array.isArray(reviewers)) return reviewers as Allowed | undefined
      const byTool = reviewers as Readonly<Record<string, Allowed>>
      const tool = context.toolName
      return tool !== undefined && Object.hasOwn(byTool, tool) ? byTool[tool] : byTool['*']
    }
    case 'answer':
      return options.answerers
    case 'steer':
      return options.steerers
    case 'control.cancel':
      return options.controllers
    case 'approval.request':
    case 'approval.withdrawn':
    case 'question.withdrawn': {
      const agents = options.agents ?? {}
      const agent = typeof message.agentId === 'string' ? message.agentId : undefined
      return agent !== undefined && Object.hasOwn(agents, agent) ? agents[agent] : agents['*']
    }
    default:
      return undefined
  }
}

const WHAT: Record<string, string> = {
  'approval.decision': 'approve or deny',
  answer: 'answer',
  steer: 'steer',
  'control.cancel': 'cancel',
  'approval.request': 'send approval requests',
  'approval.withdrawn': 'withdraw approval requests',
  'question.withdrawn': 'withdraw questions',
}

function check(
  options: TrustPolicyOptions,
  nameOf: (key: string) => string | undefined,
  message: Signed,
  context: TrustContext,
): TrustVerdict {
  const signature = verifySignature(message)
  if (!signature.ok) return signature
  const { signer } = signature
  const type = String(message.type)
  if ((type === 'approval.decision' || type === 'answer') && options.ownKey === signer) {
    return { ok: false, code: 'own-key', reason: "signed with the agent's own key: an agent never decides its own calls", signer }
  }
  if ((type === 'steer' || type === 'control.cancel') && context.agentId !== undefined && message.agentId !== context.agentId) {
    return { ok: false, code: 'wrong-agent', reason: `signed for agent ${JSON.stringify(message.agentId)}, not this one`, signer }
  }
  if (
    (type === 'approval.request' || type === 'approval.withdrawn' || type === 'question.withdrawn') &&
    context.agentId !== undefined &&
    message.agentId !== context.agentId
  ) {
    return { ok: false, code: 'wrong-agent', reason: `the request names agent ${JSON.stringify(message.agentId)}`, signer }
  }
  if (
    (type === 'steer' || type === 'control.cancel') &&
    options.maxAgeMs !== undefined &&
    context.now !== undefined &&
    Math.abs(context.now - Number(message.sentAt)) > options.maxAgeMs
  ) {
    return {
      ok: false,
      code: 'stale',
      reason: `sent at ${String(message.sentAt)}, more than ${options.maxAgeMs} ms from now`,
      signer,
    }
  }
  const name = nameOf(signer)
  if (name === undefined) return { ok: false, code: 'unknown-key', reason: `signed by an unknown key ${signer}`, signer }
  const allowed = allowedFor(options, message, context)
  if (!allowed?.includes(signer)) {
    const scope = type === 'approval.decision' && context.toolName !== undefined ? ` calls of ${context.toolName}` : ''
    return { ok: false, code: 'key-not-allowed', reason: `${name} (${signer}) may not ${WHAT[type] ?? type}${scope}`, signer }
  }
  return { ok: true, signer, name }
}

/** The audited actor of a message that carries no signature that verifies: nothing says who sent it. */
export const UNVERIFIED_ACTOR = 'unverified'

/** The name a message gives its sender: a decision's `reviewer`, an answer's `answeredBy`, a correction's or cancel's `from`. */
export function claimedName(message: unknown): string | undefined {
  if (message === null || typeof message !== 'object') return undefined
  const m = message as Record<string, unknown>
  const claimed = m.type === 'approval.decision' ? m.reviewer : m.type === 'answer' ? m.answeredBy : m.from
  return typeof claimed === 'string' ? claimed : undefined
}

/**
 * Who provably sent `message`, the name it is audited under (one rule, docs/protocol.md §17.5):
 * the policy's name for the key whose signature verifies, the key itself when the policy does not
 * name it, `unverified` when no signature verifies. Never the name the message claims.
 */
export function provenActor(policy: TrustPolicy, message: unknown): string {
  if (message === null || typeof message !== 'object') return UNVERIFIED_ACTOR
  const signature = verifySignature(message as Signed)
  if (!signature.ok) return UNVERIFIED_ACTOR
  return policy.nameOf(signature.signer) ?? signature.signer
}

/** Why a signed message is not acceptable under `policy`, or undefined when it is. */
export function whyNotAcceptable(
  policy: TrustPolicy,
  message: Signed,
  context?: TrustContext,
): { code: TrustRejectionCode; reason: string } | undefined {
  const verdict = policy.check(message, context)
  return verdict.ok ? undefined : { code: verdict.code, reason: verdict.reason }
}

/**
 * Reviewer side, from a list of agent public keys (`--agent-key`, `agentKeys`): requests signed by
 * one of them (for `agentId`, or any agent) are verified; each key is shown as `agent key <n>`
 * unless `base` names it. With `base` (a policy file's, `--trust`), the keys are added to its
 * `agents` for that scope and everything else in it is kept.
 */
export function agentKeysPolicy(agentKeys: readonly string[], agentId?: string, base?: TrustPolicy): TrustPolicy {
  const options = base?.options ?? { keys: {} }
  const scope = agentId ?? '*'
  const keys = { ...options.keys }
  agentKeys.forEach((key, i) => {
    if (!Object.hasOwn(keys, key)) keys[key] = `agent key ${i + 1}`
  })
  const agents = { ...options.agents }
  agents[scope] = [...new Set([...(Object.hasOwn(agents, scope) ? (agents[scope] ?? []) : []), ...agentKeys])]
  return createTrustPolicy({ ...options, keys, agents })
}
