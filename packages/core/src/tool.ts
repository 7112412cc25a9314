import { z } from 'zod/v4'
import type { Clock } from './clock.ts'
import { ConfigError } from './errors.ts'
import type { AgentEvent } from './events.ts'
import type { ApprovalDecision, ApprovalRequest, AuditLog, Question } from './hitl/types.ts'
import type { IdGenerator } from './ids.ts'
import type { ToolSpec } from './provider/provider.ts'

/** What a running tool gets besides its arguments. */
export interface ToolContext {
  /** Aborts when the run is cancelled, the call times out, or the state is left. */
  signal: AbortSignal
  callId: string
  agentId: string
  runId: string
  runPath: string[]
  /** Agent ids of the `runPath` runs (empty or absent for a root run). */
  agentPath?: string[]
  clock: Clock
  /** The agent's id generator (deterministic in tests). */
  ids: IdGenerator
  audit: AuditLog
  /** Reports an observe-only event on the agent's event stream (e.g. `question.asked`). */
  emit(event: ToolEmittedEvent): void
  /**
   * Set when the run is stored (an agent with a store): a question to a person that survives a
   * crash. `ask_human` stores its question here before anyone sees it; the run resumed after a
   * crash calls the tool again with `question` set, and the tool re-attaches to it (same id,
   * same absolute deadline) instead of asking anew.
   */
  durableQuestion?: DurableQuestion
  /**
   * Set for a call that a reviewer approved: the request and the decision that let it run (with the
   * signed message as received, `decision.evidence`, when the reviewer signs). A remote tool sends
   * the signed decision with the call, so a tool host can verify the approval itself.
   */
  approval?: ToolApproval
}

/** See `ToolContext.approval`. */
export interface ToolApproval {
  readonly request: ApprovalRequest
  readonly decision: ApprovalDecision
}

/** See `ToolContext.durableQuestion`. */
export interface DurableQuestion {
  /** The question this call had asked when the process stopped (a resumed call), else `undefined`. */
  readonly question: Question | undefined
  /** Stores the question with the run; resolves once it is durable (then it may be shown). */
  asking(question: Question): Promise<void>
}

/** Events a tool may report; the agent adds the run fields. */
export type ToolEmittedEvent = DistributiveOmit<AgentEvent, 'agentId' | 'runId' | 'runPath' | 'agentPath' | 'parentRunId' | 'at'>
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never

export type ValidationResult<T> = { ok: true; value: T } | { ok: false; issues: string[] }

export type ApprovalRule<A> = boolean | ((args: A) => boolean | Promise<boolean>)

export interface Tool<A = unknown> {
  readonly name: string
  readonly description: string
  /** JSON Schema of the arguments, as sent to the model. */
  readonly parameters: Record<string, unknown>
  /** Checks arguments the model produced (already JSON-parsed). */
  validate(args: unknown): ValidationResult<A>
  execute(args: A, context: ToolContext): unknown | Promise<unknown>
  /** Irreversible tools wait for a reviewer's yes before they run. */
  readonly needsApproval?: ApprovalRule<A>
  /** Milliseconds before the call is aborted and the model reads a timeout error. */
  readonly timeoutMs?: number
  /**
   * Running it twice has the effect of running it once. A durable run cut off during the call
   * runs it again on resume (with the same idempotency key); otherwise the model is told the
   * outcome is unknown. Default false.
   */
  readonly idempotent?: boolean
}

export interface ToolDefinition<S extends z.ZodType> {
  name: string
  description: string
  schema: S
  execute: (args: z.output<S>, context: ToolContext) => unknown | Promise<unknown>
  needsApproval?: ApprovalRule<z.output<S>>
  timeoutMs?: number
  /** See `Tool.idempotent`. */
  idempotent?: boolean
}

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/

export function assertToolName(name: string): void {
  // The chat-completions API only accepts these names; failing here beats a 400 mid-run.
  if (!TOOL_NAME.test(name)) {
    throw new ConfigError(`Invalid tool name "${name}": use 1-64 letters, digits, "_" or "-".`, { name })
  }
}

/**
 * Defines a tool from a zod schema; the JSON Schema the model sees is generated from it.
 *
 * @example
 * ```ts
 * const bookTicket = tool({
 *   name: 'book_ticket',
 *   description: 'Book one seat on a train.',
 *   schema: z.object({ train: z.number().int(), seat_class: z.enum(['first', 'tourist']) }),
 *   needsApproval: true, // a person approves the exact call first
 *   execute: async ({ train, seat_class }, { signal }) => reserveSeat(train, seat_class, signal),
 * })
 * ```
 */
export function tool<S extends z.ZodType>(definition: ToolDefinition<S>): Tool<z.output<S>> {
  assertToolName(definition.name)
  const { schema } = definition
  assertZod4Schema(schema, definition.name)
  const parameters = toParameters(schema, definition.name)
  return {
    name: definition.name,
    description: definition.description,
    parameters,
    validate: (args) => {
      const parsed = schema.safeParse(args)
      if (parsed.success) return { ok: true, value: parsed.data }
      return { ok: false, issues: formatIssues(parsed.error) }
    },
    execute: definition.execute,
    ...(definition.needsApproval === undefined ? {} : { needsApproval: definition.needsApproval }),
    ...(definition.timeoutMs === undefined ? {} : { timeoutMs: definition.timeoutMs }),
    ...(definition.idempotent === undefined ? {} : { idempotent: definition.idempotent }),
  }
}

/**
 * Schemas are read through zod 4's API (`zod/v4`, which zod 3.25+ also ships). A zod 3 schema has
 * `_def` and no `_zod`; without this check it fails later with "cannot read 'def'".
 */
function assertZod4Schema(schema: unknown, name: string): void {
  if (typeof schema === 'object' && schema !== null && '_zod' in schema) return
  if (typeof schema === 'object' && schema !== null && '_def' in schema) {
    throw new ConfigError(
      `Tool "${name}": its schema was made with zod 3; signalbox needs a zod 4 schema. Upgrade to zod 4 (npm i zod@^4), or with zod 3.25+ import it from the v4 entry: import { z } from 'zod/v4'.`,
    )
  }
  throw new ConfigError(`Tool "${name}": \`schema\` must be a zod 4 schema such as z.object({ ... }).`)
}

function toParameters(schema: z.ZodType, name: string): Record<string, unknown> {
  let json: Record<string, unknown>
  try {
    json = z.toJSONSchema(schema, { target: 'draft-07', io: 'input', unrepresentable: 'throw' }) as Record<string, unknown>
  } catch (cause) {
    throw new ConfigError(`Tool "${name}": its zod schema cannot be expressed as JSON Schema (${String(cause)}).`)
  }
  if (json.type !== 'object') {
    throw new ConfigError(`Tool "${name}": the schema must be a z.object(...), got JSON Schema type ${String(json.type)}.`)
  }
  const { $schema: _ignored, ...rest } = json
  return rest
}

/** One line per problem, with the path, so the model can fix its call. */
export function formatIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const path = issue.path.length > 0 ? issue.path.map(String).join('.') : '(root)'
    return `${path}: ${issue.message}`
  })
}

export function toToolSpec(t: Tool<unknown>): ToolSpec {
  return { name: t.name, description: t.description, parameters: t.parameters }
}

/** Normalizes what a tool returned into the text the model reads. */
export function stringifyToolOutput(value: unknown): string {
  if (typeof value === 'string') return value
  if (value === undefined) return ''
  try {
    return JSON.stringify(value)
  } catch {
    return String(value)
  }
}
