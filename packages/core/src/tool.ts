import type { Clock } from './clock.ts'
import { ConfigError } from './errors.ts'
import type { AgentEvent } from './events.ts'
import type { ApprovalDecision, ApprovalRequest, AuditLog, Question } from './hitl/types.ts'
import type { IdGenerator } from './ids.ts'
import { isName, NAME_RULE } from './names.ts'
import type { ToolSpec } from './provider/provider.ts'
import { assertSchema, type Schema, type SchemaOutput, toJsonSchema, type ValidationResult, validate } from './schema.ts'

/** What a running tool gets besides its arguments. */
export interface ToolContext {
  /** Aborts when the run is cancelled, the call times out, or the state is left. */
  signal: AbortSignal
  callId: string
  /**
   * Set when this call had started before its run was cut off (a crash, a takeover) and runs
   * again on resume (an `idempotent` tool): the tool may re-attach to what it started (same
   * `runId` and `callId`) instead of starting it anew.
   */
  rerun?: true
  /**
   * The turn whose reply made this call (the same after a resume). With `runId` and `callId` it
   * names the call in a way that survives providers that number their call ids per reply.
   */
  turn?: number
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

export type { ValidationResult } from './schema.ts'

export type ApprovalRule<A> = boolean | ((args: A) => boolean | Promise<boolean>)

/**
 * A tool the model may call. `A` is the type of its arguments; `N` its name, a literal type for a
 * tool made by `tool({ name: 'book_ticket', ... })`, so hooks and reviewers can tell the agent's
 * tools apart by `toolName` with typed arguments (see `ToolCallOf`).
 */
export interface Tool<A = unknown, N extends string = string> {
  readonly name: N
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

export interface ToolDefinition<S extends Schema, N extends string = string> {
  name: N
  description: string
  /** The arguments: a zod 4 schema (`zod`, or `zod/v4` on zod 3.25), or a zod 3 one; an object. */
  schema: S
  execute: (args: SchemaOutput<S>, context: ToolContext) => unknown | Promise<unknown>
  needsApproval?: ApprovalRule<SchemaOutput<S>>
  timeoutMs?: number
  /** See `Tool.idempotent`. */
  idempotent?: boolean
}

export function assertToolName(name: string): void {
  // The chat-completions API only accepts these names; failing here beats a 400 mid-run.
  if (!isName(name)) {
    throw new ConfigError(`Invalid tool name "${name}": use ${NAME_RULE}.`, { name })
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
export function tool<S extends Schema, N extends string = string>(definition: ToolDefinition<S, N>): Tool<SchemaOutput<S>, N> {
  assertToolName(definition.name)
  const { schema } = definition
  assertSchema(schema, `Tool "${definition.name}": \`schema\``, 'z.object({ ... })')
  const parameters = toJsonSchema(schema, 'input', `Tool "${definition.name}": its schema`)
  if (parameters.type !== 'object') {
    throw new ConfigError(
      `Tool "${definition.name}": the schema must be a z.object(...), got JSON Schema type ${String(parameters.type)}.`,
    )
  }
  return {
    name: definition.name,
    description: definition.description,
    parameters,
    validate: (args) => validate(schema, args),
    execute: definition.execute,
    ...(definition.needsApproval === undefined ? {} : { needsApproval: definition.needsApproval }),
    ...(definition.timeoutMs === undefined ? {} : { timeoutMs: definition.timeoutMs }),
    ...(definition.idempotent === undefined ? {} : { idempotent: definition.idempotent }),
  }
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
