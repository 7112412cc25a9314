/**
 * Every error signalbox throws or reports is a `SignalboxError` with a stable `code`.
 * `fault` says who has to act: the user (configuration, hooks), the model (bad tool call),
 * the provider (endpoint), a peer on the bus, or the runtime itself.
 *
 * Check errors with `SignalboxError.is(error, code?)` (or a subclass's `is`), not `instanceof`:
 * an app can end up with two copies of a signalbox package, and `instanceof` is false for an
 * error made by the other copy. `is` reads a marker keyed by `Symbol.for`, shared by every copy.
 */
/**
 * The stable codes of the errors the signalbox packages throw or report, and that callers compare
 * against. A peer, a tool or a user's own subclass may carry codes not listed here; `code` stays a string.
 */
export const ErrorCode = {
  // The loop
  ABORTED: 'ABORTED',
  TIMEOUT: 'TIMEOUT',
  UNKNOWN_ERROR: 'UNKNOWN_ERROR',
  /** A broken invariant inside signalbox: a bug to report. */
  INTERNAL_ERROR: 'INTERNAL_ERROR',
  CONFIG_INVALID: 'CONFIG_INVALID',
  HOOK_FAILED: 'HOOK_FAILED',
  MAX_TURNS_EXCEEDED: 'MAX_TURNS_EXCEEDED',
  RUN_CANCELLED: 'RUN_CANCELLED',
  RUN_FAILED: 'RUN_FAILED',
  BUDGET_EXCEEDED: 'BUDGET_EXCEEDED',
  OUTPUT_INVALID: 'OUTPUT_INVALID',
  RUN_STREAM_CONSUMED: 'RUN_STREAM_CONSUMED',
  // The model endpoint
  PROVIDER_ERROR: 'PROVIDER_ERROR',
  PROVIDER_UNREACHABLE: 'PROVIDER_UNREACHABLE',
  PROVIDER_AUTH: 'PROVIDER_AUTH',
  PROVIDER_NOT_FOUND: 'PROVIDER_NOT_FOUND',
  PROVIDER_RATE_LIMITED: 'PROVIDER_RATE_LIMITED',
  PROVIDER_REJECTED: 'PROVIDER_REJECTED',
  PROVIDER_UNAVAILABLE: 'PROVIDER_UNAVAILABLE',
  // The scripted model (`@signalbox/core/testing`)
  SCRIPT_EXHAUSTED: 'SCRIPT_EXHAUSTED',
  SCRIPT_MISMATCH: 'SCRIPT_MISMATCH',
  SCRIPT_UNKNOWN_MODEL: 'SCRIPT_UNKNOWN_MODEL',
  SCRIPT_RESPONDER_FAILED: 'SCRIPT_RESPONDER_FAILED',
  SCRIPT_NOT_DONE: 'SCRIPT_NOT_DONE',
  // People in the loop
  QUESTION_FAILED: 'QUESTION_FAILED',
  QUESTION_TIMEOUT: 'QUESTION_TIMEOUT',
  DECISION_NOT_STORED: 'DECISION_NOT_STORED',
  CONTROL_NOT_AUTHORIZED: 'CONTROL_NOT_AUTHORIZED',
  // Tools, local and remote (the host's codes are also sent on the wire)
  TOOL_TIMEOUT: 'TOOL_TIMEOUT',
  TOOL_UNKNOWN: 'TOOL_UNKNOWN',
  /** A remote tool host refused the call's arguments (the local check is the same: `invalid_arguments`). */
  TOOL_INVALID_ARGUMENTS: 'TOOL_INVALID_ARGUMENTS',
  TOOL_FAILED: 'TOOL_FAILED',
  TOOL_HOST_STOPPED: 'TOOL_HOST_STOPPED',
  TOOL_RESULT_TOO_LARGE: 'TOOL_RESULT_TOO_LARGE',
  TOOL_UNAVAILABLE: 'TOOL_UNAVAILABLE',
  TOOL_BAD_REPLY: 'TOOL_BAD_REPLY',
  TOOL_ARGUMENTS_TOO_LARGE: 'TOOL_ARGUMENTS_TOO_LARGE',
  /** A tool host that verifies approvals got a call of a gated tool that carries no signed approval. */
  APPROVAL_REQUIRED: 'APPROVAL_REQUIRED',
  /** A tool host that verifies approvals refused the approval a call carries (`details.reason` says why). */
  APPROVAL_INVALID: 'APPROVAL_INVALID',
  // The bus
  BUS_TIMEOUT: 'BUS_TIMEOUT',
  BUS_NO_RESPONDERS: 'BUS_NO_RESPONDERS',
  BUS_PAYLOAD_TOO_LARGE: 'BUS_PAYLOAD_TOO_LARGE',
  BUS_CLOSED: 'BUS_CLOSED',
  BUS_NOT_DURABLE: 'BUS_NOT_DURABLE',
  BUS_CONSUMER_CONFLICT: 'BUS_CONSUMER_CONFLICT',
  BUS_CONSUMER_FAILED: 'BUS_CONSUMER_FAILED',
  BUS_CONNECT_FAILED: 'BUS_CONNECT_FAILED',
  BUS_DURABLE_SETUP_FAILED: 'BUS_DURABLE_SETUP_FAILED',
  BUS_DURABLE_REJECTED: 'BUS_DURABLE_REJECTED',
  BUS_JETSTREAM_DISABLED: 'BUS_JETSTREAM_DISABLED',
  /** The durable stream is not there and this user may only read it (an agent host creates it). */
  BUS_STREAM_NOT_FOUND: 'BUS_STREAM_NOT_FOUND',
  BUS_PERMISSION_DENIED: 'BUS_PERMISSION_DENIED',
  BUS_ERROR: 'BUS_ERROR',
  SUBJECT_INVALID: 'SUBJECT_INVALID',
  // Connecting to NATS
  NATS_UNREACHABLE: 'NATS_UNREACHABLE',
  NATS_TLS_FAILED: 'NATS_TLS_FAILED',
  NATS_AUTHORIZATION_VIOLATION: 'NATS_AUTHORIZATION_VIOLATION',
  NATS_AUTHENTICATION_EXPIRED: 'NATS_AUTHENTICATION_EXPIRED',
  NATS_CREDS_INVALID: 'NATS_CREDS_INVALID',
  NATS_CREDS_UNREADABLE: 'NATS_CREDS_UNREADABLE',
  NATS_NKEY_INVALID: 'NATS_NKEY_INVALID',
  NATS_NKEY_UNREADABLE: 'NATS_NKEY_UNREADABLE',
  NATS_CREDENTIALS_CONFLICT: 'NATS_CREDENTIALS_CONFLICT',
  NATS_TLS_CONFIG: 'NATS_TLS_CONFIG',
  // The wire protocol
  PROTOCOL_INVALID_JSON: 'PROTOCOL_INVALID_JSON',
  PROTOCOL_UNSUPPORTED_VERSION: 'PROTOCOL_UNSUPPORTED_VERSION',
  PROTOCOL_UNEXPECTED_TYPE: 'PROTOCOL_UNEXPECTED_TYPE',
  PROTOCOL_INVALID_MESSAGE: 'PROTOCOL_INVALID_MESSAGE',
  PROTOCOL_TOO_LARGE: 'PROTOCOL_TOO_LARGE',
  /** A peer's error reply with an empty code. */
  ERROR: 'ERROR',
  // Run stores and checkpoints
  CHECKPOINT_TRUNCATED: 'CHECKPOINT_TRUNCATED',
  CHECKPOINT_INVALID_JSON: 'CHECKPOINT_INVALID_JSON',
  CHECKPOINT_UNSUPPORTED_VERSION: 'CHECKPOINT_UNSUPPORTED_VERSION',
  CHECKPOINT_INVALID: 'CHECKPOINT_INVALID',
  RUN_NOT_FOUND: 'RUN_NOT_FOUND',
  RUN_REVISION_CONFLICT: 'RUN_REVISION_CONFLICT',
  RUN_LEASE_HELD: 'RUN_LEASE_HELD',
  RUN_NOT_OWNER: 'RUN_NOT_OWNER',
  RUN_ID_INVALID: 'RUN_ID_INVALID',
  RUN_STORE_TOO_LARGE: 'RUN_STORE_TOO_LARGE',
  RUN_TRANSCRIPT_GAP: 'RUN_TRANSCRIPT_GAP',
  RUN_NOT_RESUMABLE: 'RUN_NOT_RESUMABLE',
  RUN_STORE_UNAVAILABLE: 'RUN_STORE_UNAVAILABLE',
  // Agent systems and run trees
  TREE_BUDGET_EXCEEDED: 'TREE_BUDGET_EXCEEDED',
  TREE_DEPTH_EXCEEDED: 'TREE_DEPTH_EXCEEDED',
  HANDOFF_LIMIT: 'HANDOFF_LIMIT',
  CHILD_FAILED: 'CHILD_FAILED',
  /** A parent re-attaching to its child found it nowhere: no host runs it, no result is stored. */
  CHILD_LOST: 'CHILD_LOST',
  AGENT_UNKNOWN: 'AGENT_UNKNOWN',
  AGENT_UNAVAILABLE: 'AGENT_UNAVAILABLE',
  HOST_STOPPING: 'HOST_STOPPING',
  // Trust: signing, policies, permissions
  SIGNING_KEY_INVALID: 'SIGNING_KEY_INVALID',
  TRUST_POLICY_INVALID: 'TRUST_POLICY_INVALID',
  PERMISSION_SCOPE_INVALID: 'PERMISSION_SCOPE_INVALID',
  // MCP servers
  MCP_CONNECT_FAILED: 'MCP_CONNECT_FAILED',
  MCP_CLOSED: 'MCP_CLOSED',
  MCP_SERVER_LOST: 'MCP_SERVER_LOST',
  MCP_UNAVAILABLE: 'MCP_UNAVAILABLE',
  MCP_TIMEOUT: 'MCP_TIMEOUT',
  MCP_ERROR: 'MCP_ERROR',
  MCP_TOOL_ERROR: 'MCP_TOOL_ERROR',
  // The inspector
  INSPECTOR_BAD_PORT: 'INSPECTOR_BAD_PORT',
  INSPECTOR_PORT_IN_USE: 'INSPECTOR_PORT_IN_USE',
  INSPECTOR_LISTEN_FAILED: 'INSPECTOR_LISTEN_FAILED',
  INSPECTOR_FAILED: 'INSPECTOR_FAILED',
  /** The optional peer dependency `@statelyai/inspect` is not installed. */
  INSPECTOR_UNAVAILABLE: 'INSPECTOR_UNAVAILABLE',
  // The review console's HTTP API
  BAD_REQUEST: 'BAD_REQUEST',
  FORBIDDEN: 'FORBIDDEN',
  NOT_FOUND: 'NOT_FOUND',
  NOT_PENDING: 'NOT_PENDING',
  UNKNOWN_RUN: 'UNKNOWN_RUN',
  // The `signalbox` command
  USAGE: 'USAGE',
  NO_BUS: 'NO_BUS',
  NO_MODEL: 'NO_MODEL',
  NO_SCRIPT: 'NO_SCRIPT',
  MODULE_NOT_FOUND: 'MODULE_NOT_FOUND',
  MODULE_LOAD_FAILED: 'MODULE_LOAD_FAILED',
  MODULE_INVALID: 'MODULE_INVALID',
  TOOLS_NOT_FOUND: 'TOOLS_NOT_FOUND',
  AGENT_NOT_FOUND: 'AGENT_NOT_FOUND',
  MCP_NO_TOOLS: 'MCP_NO_TOOLS',
  BAD_OTLP_URL: 'BAD_OTLP_URL',
  NKEY_UNREADABLE: 'NKEY_UNREADABLE',
  SIGNING_KEY_UNREADABLE: 'SIGNING_KEY_UNREADABLE',
  TRUST_FILE_UNREADABLE: 'TRUST_FILE_UNREADABLE',
  TS_LOADER_MISSING: 'TS_LOADER_MISSING',
  KEY_FILE_EXISTS: 'KEY_FILE_EXISTS',
  KEY_FILE_UNWRITABLE: 'KEY_FILE_UNWRITABLE',
} as const
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]

export type ErrorFault = 'user' | 'model' | 'provider' | 'peer' | 'runtime'

export interface SerializedError {
  code: string
  message: string
  name?: string
  fault?: ErrorFault
  details?: Record<string, unknown>
}

/**
 * The marker every signalbox error carries: the names of its classes, itself first. `Symbol.for`
 * gives every copy of this module the same key, so an error from one copy is recognised by another.
 */
const KINDS = Symbol.for('signalbox.error')

/** Names of `target`'s classes up to `SignalboxError`, computed once per class. */
const kindsByClass = new WeakMap<object, readonly string[]>()
function kindsOf(target: object): readonly string[] {
  let kinds = kindsByClass.get(target)
  if (kinds === undefined) {
    const names: string[] = []
    for (let at: unknown = target; typeof at === 'function' && at !== Error; at = Object.getPrototypeOf(at)) {
      names.push(at.name)
      if (at === SignalboxError) break
    }
    kinds = Object.freeze(names)
    kindsByClass.set(target, kinds)
  }
  return kinds
}

function hasKind(error: unknown, kind: unknown, code: string | undefined): boolean {
  if (typeof error !== 'object' || error === null) return false
  const kinds = (error as { [KINDS]?: unknown })[KINDS]
  if (!Array.isArray(kinds)) return false
  // The base class asks for the marker only (its name may be mangled by a bundler).
  const ofKind = typeof kind !== 'function' || kind === SignalboxError || kinds.includes(kind.name)
  return ofKind && (code === undefined || (error as { code?: unknown }).code === code)
}

export class SignalboxError extends Error {
  readonly code: string
  readonly fault: ErrorFault
  readonly details: Record<string, unknown> | undefined

  constructor(
    code: string,
    message: string,
    options: { cause?: unknown; fault?: ErrorFault; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = new.target.name
    this.code = code
    this.fault = options.fault ?? 'runtime'
    this.details = options.details
    Object.defineProperty(this, KINDS, { value: kindsOf(new.target) })
  }

  /**
   * Whether `error` is a signalbox error of this class (`SignalboxError.is`: any; `BusError.is`:
   * a bus error) and, when `code` is given, carries that code. Unlike `instanceof`, it also holds
   * for an error made by another copy of the package loaded in the same process.
   */
  static is<E extends SignalboxError>(this: abstract new (...args: never[]) => E, error: unknown, code?: string): error is E {
    // biome-ignore lint/complexity/noThisInStatic: `is` answers for the class it is called on (`BusError.is`).
    return hasKind(error, this, code)
  }

  toJSON(): SerializedError {
    return {
      code: this.code,
      message: this.message,
      name: this.name,
      fault: this.fault,
      ...(this.details ? { details: this.details } : {}),
    }
  }
}

/** A hook threw or returned something the loop cannot use. The run fails closed. */
export class HookError extends SignalboxError {
  readonly hookPoint: string
  constructor(hookPoint: string, cause: unknown) {
    super(ErrorCode.HOOK_FAILED, `Hook "${hookPoint}" failed: ${describeError(cause)}`, {
      cause,
      fault: 'user',
      details: { hookPoint },
    })
    this.hookPoint = hookPoint
  }
}

/** The run reached `maxTurns` without a final answer. */
export class MaxTurnsExceededError extends SignalboxError {
  constructor(maxTurns: number) {
    super(ErrorCode.MAX_TURNS_EXCEEDED, `No final answer after ${maxTurns} turns (maxTurns=${maxTurns}).`, {
      fault: 'model',
      details: { maxTurns },
    })
  }
}

/** The run was cancelled (by `cancel()`, an aborted signal, or a hook's stop). */
export class RunCancelledError extends SignalboxError {
  /** Who cancelled, when known (the name the agent's policy gives the canceller's key, or the sender). */
  readonly by: string | undefined
  constructor(reason: string, options: { by?: string } = {}) {
    super(ErrorCode.RUN_CANCELLED, `Run cancelled: ${reason}`, {
      fault: 'user',
      details: { reason, ...(options.by !== undefined ? { by: options.by } : {}) },
    })
    this.by = options.by
  }
}

/** The model endpoint refused the request or could not be reached. */
export class ProviderError extends SignalboxError {
  readonly status: number | undefined
  readonly retryable: boolean
  constructor(message: string, options: { status?: number; retryable: boolean; cause?: unknown; code?: string }) {
    super(options.code ?? ErrorCode.PROVIDER_ERROR, message, {
      cause: options.cause,
      fault: 'provider',
      details: { status: options.status, retryable: options.retryable },
    })
    this.status = options.status
    this.retryable = options.retryable
  }
}

/** Invalid configuration given to a signalbox factory. */
export class ConfigError extends SignalboxError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.CONFIG_INVALID, message, { fault: 'user', ...(details ? { details } : {}) })
  }
}

/** A tool failed; the model reads the message as an error result and the run goes on. */
export class ToolError extends SignalboxError {
  constructor(code: string, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(code, message, { fault: 'model', ...options })
  }
}

/** An operation was aborted through its AbortSignal. */
export class AbortedError extends SignalboxError {
  constructor(message = 'The operation was aborted.', cause?: unknown) {
    super(ErrorCode.ABORTED, message, { cause, fault: 'user' })
  }
}

/** An operation did not finish before its deadline. */
export class TimeoutError extends SignalboxError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.TIMEOUT, message, { fault: 'runtime', ...(details ? { details } : {}) })
  }
}

export function describeError(error: unknown): string {
  if (error instanceof Error) return error.message
  if (typeof error === 'string') return error
  try {
    return JSON.stringify(error)
  } catch {
    return String(error)
  }
}

/** A throwable as an `Error`: itself, or (a thrown string, object…) an `UNKNOWN_ERROR` quoting it. */
export function asError(error: unknown): Error {
  if (error instanceof Error || SignalboxError.is(error)) return error
  return new SignalboxError(ErrorCode.UNKNOWN_ERROR, describeError(error), { cause: error })
}

/** Normalize any throwable once, at a boundary, into data that can cross the bus or be persisted. */
export function serializeError(error: unknown): SerializedError {
  if (SignalboxError.is(error)) return error.toJSON()
  if (error instanceof Error) return { code: ErrorCode.UNKNOWN_ERROR, message: error.message, name: error.name }
  return { code: ErrorCode.UNKNOWN_ERROR, message: describeError(error) }
}

/** Rebuild an error from data received over the wire. The `code` survives the trip. */
export function deserializeError(data: SerializedError): SignalboxError {
  return new SignalboxError(data.code, data.message, {
    fault: data.fault ?? 'peer',
    ...(data.details ? { details: data.details } : {}),
  })
}

export function isAbortError(error: unknown): boolean {
  if (SignalboxError.is(error, ErrorCode.ABORTED)) return true
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'APIUserAbortError')
}

/**
 * A tool failure that must end the run (status `failed`) instead of being shown to the model,
 * e.g. a supervisor giving up on a child.
 */
export class FatalToolError extends SignalboxError {
  constructor(code: string, message: string, options: { cause?: unknown; details?: Record<string, unknown> } = {}) {
    super(code, message, { fault: 'runtime', ...options })
  }
}

/** A run tree or a run went over its token budget. */
export class BudgetExceededError extends SignalboxError {
  constructor(message: string, details?: Record<string, unknown>) {
    super(ErrorCode.BUDGET_EXCEEDED, message, { fault: 'runtime', ...(details ? { details } : {}) })
  }
}

/** Nobody answered a question to the person before its deadline. */
export class QuestionTimeoutError extends SignalboxError {
  constructor(timeoutMs: number) {
    super(ErrorCode.QUESTION_TIMEOUT, `Nobody answered within ${timeoutMs} ms.`, { fault: 'user', details: { timeoutMs } })
  }
}
