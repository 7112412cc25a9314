/**
 * Every error signalbox throws or reports is a `SignalboxError` with a stable `code`.
 * `fault` says who has to act: the user (configuration, hooks), the model (bad tool call),
 * the provider (endpoint), a peer on the bus, or the runtime itself.
 */
/**
 * The stable codes of the errors signalbox's core throws or reports, and that callers compare
 * against. A peer or another package may send codes not listed here; `code` stays a string.
 */
export const ErrorCode = {
  ABORTED: 'ABORTED',
  TIMEOUT: 'TIMEOUT',
  UNKNOWN_ERROR: 'UNKNOWN_ERROR',
  CONFIG_INVALID: 'CONFIG_INVALID',
  HOOK_FAILED: 'HOOK_FAILED',
  MAX_TURNS_EXCEEDED: 'MAX_TURNS_EXCEEDED',
  RUN_CANCELLED: 'RUN_CANCELLED',
  RUN_FAILED: 'RUN_FAILED',
  BUDGET_EXCEEDED: 'BUDGET_EXCEEDED',
  PROVIDER_ERROR: 'PROVIDER_ERROR',
  PROVIDER_UNREACHABLE: 'PROVIDER_UNREACHABLE',
  QUESTION_FAILED: 'QUESTION_FAILED',
  QUESTION_TIMEOUT: 'QUESTION_TIMEOUT',
  TOOL_TIMEOUT: 'TOOL_TIMEOUT',
  /** A remote tool host refused the call's arguments (the local check is the same: `invalid_arguments`). */
  TOOL_INVALID_ARGUMENTS: 'TOOL_INVALID_ARGUMENTS',
  BUS_TIMEOUT: 'BUS_TIMEOUT',
  BUS_NO_RESPONDERS: 'BUS_NO_RESPONDERS',
  BUS_PAYLOAD_TOO_LARGE: 'BUS_PAYLOAD_TOO_LARGE',
  BUS_CLOSED: 'BUS_CLOSED',
  BUS_NOT_DURABLE: 'BUS_NOT_DURABLE',
  BUS_CONSUMER_CONFLICT: 'BUS_CONSUMER_CONFLICT',
  SUBJECT_INVALID: 'SUBJECT_INVALID',
  PROTOCOL_INVALID_JSON: 'PROTOCOL_INVALID_JSON',
  PROTOCOL_UNSUPPORTED_VERSION: 'PROTOCOL_UNSUPPORTED_VERSION',
  PROTOCOL_UNEXPECTED_TYPE: 'PROTOCOL_UNEXPECTED_TYPE',
  PROTOCOL_INVALID_MESSAGE: 'PROTOCOL_INVALID_MESSAGE',
  PROTOCOL_TOO_LARGE: 'PROTOCOL_TOO_LARGE',
  TREE_BUDGET_EXCEEDED: 'TREE_BUDGET_EXCEEDED',
  TREE_DEPTH_EXCEEDED: 'TREE_DEPTH_EXCEEDED',
  HANDOFF_LIMIT: 'HANDOFF_LIMIT',
  CHILD_FAILED: 'CHILD_FAILED',
  OUTPUT_INVALID: 'OUTPUT_INVALID',
  /** A tool host that verifies approvals got a call of a gated tool that carries no signed approval. */
  APPROVAL_REQUIRED: 'APPROVAL_REQUIRED',
  /** A tool host that verifies approvals refused the approval a call carries (`details.reason` says why). */
  APPROVAL_INVALID: 'APPROVAL_INVALID',
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
  constructor(reason: string) {
    super(ErrorCode.RUN_CANCELLED, `Run cancelled: ${reason}`, { fault: 'user', details: { reason } })
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

/** Normalize any throwable once, at a boundary, into data that can cross the bus or be persisted. */
export function serializeError(error: unknown): SerializedError {
  if (error instanceof SignalboxError) return error.toJSON()
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
  if (error instanceof AbortedError) return true
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
