/**
 * The script format shared by the scripted model server (HTTP) and the scripted provider
 * (in-process): what a fake model answers, step by step, as plain data.
 */
import { SignalboxError } from '../errors.ts'
import type { Message, ToolCall, Usage } from '../messages.ts'
import type { ToolSpec } from '../provider/provider.ts'

export interface ScriptedToolCall {
  /** Defaults to `call_<n>`, unique per server / provider. */
  id?: string
  name: string
  /** Objects are JSON.stringified; strings are sent verbatim (so malformed arguments can be scripted). */
  arguments: string | Record<string, unknown>
}

export interface ScriptedReply {
  content?: string
  toolCalls?: ScriptedToolCall[]
  /** Default: `'tool_calls'` when there are tool calls, else `'stop'`. */
  finishReason?: string
  /** Default: rough estimates from the text sizes, never zero. */
  usage?: { promptTokens: number; completionTokens: number }
}

export interface ScriptedError {
  error: { status: number; message: string; type?: string; code?: string }
  /** Answer this error N times before moving on to the next step. Default 1. */
  times?: number
  /** Extra response headers (HTTP server only), e.g. `retry-after-ms`. */
  headers?: Record<string, string>
}

export interface ScriptedDelay {
  /** Wait this long before answering; aborted when the caller goes away. */
  delayMs?: number
}

/** `true` when the request is the expected one, else why not (a loud failure). */
export type RequestExpectation = (request: RecordedRequest) => true | string

export type ScriptStep = (ScriptedReply | ScriptedError) & ScriptedDelay & { expect?: RequestExpectation }

/** Computes each answer; `index` counts the requests routed to this script, from 0. */
export type Responder = (request: RecordedRequest, index: number) => ScriptStep | Promise<ScriptStep>

export type Script = ScriptStep[] | Responder

/** Scripts by model name; `'*'` answers any model without its own script. */
export type Scripts = Record<string, Script>

export interface RecordedRequest {
  model: string
  messages: Message[]
  tools: ToolSpec[]
  stream: boolean
  /** The full request body as received (the `ProviderRequest` for the in-process provider). */
  body: unknown
  headers: Record<string, string>
  receivedAt: number
}

/** A step the script did not plan for, or a script that was not played to the end. */
export class ScriptedModelError extends SignalboxError {
  constructor(
    code: 'SCRIPT_EXHAUSTED' | 'SCRIPT_MISMATCH' | 'SCRIPT_UNKNOWN_MODEL' | 'SCRIPT_RESPONDER_FAILED' | 'SCRIPT_NOT_DONE',
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(code, message, { ...options, fault: 'user' })
  }
}

export const isErrorStep = (step: ScriptStep): step is ScriptedError & ScriptedDelay => 'error' in step

/** A reply step with everything defaulted, ready to be put on the wire or returned. */
export interface ResolvedReply {
  content: string | null
  toolCalls: ToolCall[]
  finishReason: string
  usage: Usage
}

export function resolveReply(step: ScriptedReply, request: RecordedRequest, nextCallId: () => string): ResolvedReply {
  const toolCalls: ToolCall[] = []
  let completionChars = step.content?.length ?? 0
  for (const call of step.toolCalls ?? []) {
    const args = typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments)
    completionChars += call.name.length + args.length
    toolCalls.push({ id: call.id ?? nextCallId(), type: 'function', function: { name: call.name, arguments: args } })
  }
  const promptTokens = step.usage?.promptTokens ?? estimatePromptTokens(request.messages)
  const completionTokens = step.usage?.completionTokens ?? Math.max(1, Math.ceil(completionChars / 4))
  return {
    // Like the real API: no content is `null` next to tool calls, `''` on a plain answer.
    content: step.content ?? (toolCalls.length > 0 ? null : ''),
    toolCalls,
    finishReason: step.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
    usage: { promptTokens, completionTokens, totalTokens: promptTokens + completionTokens },
  }
}

/** ~4 characters a token plus a little per message; a loop, not a JSON.stringify, to stay cheap. */
function estimatePromptTokens(messages: Message[]): number {
  let chars = 0
  for (const message of messages) {
    chars += 16 + (typeof message.content === 'string' ? message.content.length : 0)
    if (message.role === 'assistant' && message.tool_calls) {
      for (const call of message.tool_calls) chars += call.function.name.length + call.function.arguments.length
    }
  }
  return Math.max(1, Math.ceil(chars / 4))
}

/** Word-sized fragments (each word keeps its trailing whitespace); they join back to `text` exactly. */
export function splitWords(text: string): string[] {
  return text.length === 0 ? [] : text.split(/(?<=\s)(?=\S)/)
}

/** A few fragments of roughly equal size, never splitting a surrogate pair. */
export function splitFragments(text: string, maxPieces = 6): string[] {
  if (text.length <= 4) return [text]
  const size = Math.max(4, Math.ceil(text.length / maxPieces))
  const pieces: string[] = []
  let start = 0
  while (start < text.length) {
    let end = Math.min(text.length, start + size)
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end += 1
    pieces.push(text.slice(start, end))
    start = end
  }
  return pieces
}

/** An error named `AbortError`, as fetch and the SDKs throw, carrying the signal's reason. */
export function abortError(signal: AbortSignal): Error {
  const error = new Error('The operation was aborted.', { cause: signal.reason })
  error.name = 'AbortError'
  return error
}

/** Resolves after `ms`, or rejects with an AbortError as soon as `signal` aborts. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortError(signal))
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer)
      reject(abortError(signal))
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
