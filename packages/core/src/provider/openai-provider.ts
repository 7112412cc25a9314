import OpenAI, { APIConnectionError, APIError, APIUserAbortError } from 'openai'
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions'
import { AbortedError, ConfigError, ProviderError } from '../errors.ts'
import type { AssistantMessage, ToolCall, Usage } from '../messages.ts'
import type { Provider, ProviderCallOptions, ProviderRequest, ProviderResponse, ToolSpec } from './provider.ts'

export interface OpenAIProviderOptions {
  /** Default: `OPENAI_BASE_URL`, else OpenAI's API. E.g. `http://localhost:11434/v1` for Ollama. */
  baseURL?: string
  /** Default: `OPENAI_API_KEY`; local servers usually ignore it. */
  apiKey?: string
  /** Default: `SIGNALBOX_MODEL`. */
  model?: string
  /** Stream the reply (text deltas become `text.delta` events). Default true. */
  stream?: boolean
  /** Per-request timeout in milliseconds. Default 10 minutes (the SDK's). */
  timeoutMs?: number
  /** Extra fields sent with every request (temperature, max_tokens...). */
  extraBody?: Record<string, unknown>
  /** Use an existing client instead of building one. */
  client?: OpenAI
  /**
   * Who serves the model, for telemetry (`gen_ai.provider.name`). Default `openai`: the OpenAI
   * API's conventions (an OpenAI-compatible server may be named, e.g. `ollama`).
   */
  providerName?: string
}

/**
 * Any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, LM Studio...) through
 * the `openai` SDK. The SDK's own retries are off: the agent owns the retry policy, so retries
 * are visible as `model.retry` events and testable with a simulated clock.
 */
/**
 * The tools in the wire format, built once per tool list: an agent sends the same list on every
 * call (a hook that changes it sends a new one), so a request costs no rebuilding per call.
 */
const wireToolLists = new WeakMap<readonly ToolSpec[], { specs: ToolSpec[]; wire: ChatCompletionTool[] }>()
function wireTools(tools: readonly ToolSpec[]): ChatCompletionTool[] {
  const cached = wireToolLists.get(tools)
  // Checked spec by spec: a hook may change a list it handed back before.
  if (cached && cached.specs.length === tools.length && cached.specs.every((spec, i) => spec === tools[i])) return cached.wire
  const wire = tools.map(
    (t): ChatCompletionTool => ({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }),
  )
  wireToolLists.set(tools, { specs: [...tools], wire })
  return wire
}

export class OpenAIProvider implements Provider {
  readonly model: string
  readonly baseURL: string
  readonly providerName: string
  readonly #client: OpenAI
  readonly #stream: boolean
  readonly #extraBody: Record<string, unknown>

  constructor(options: OpenAIProviderOptions = {}) {
    const model = options.model ?? process.env.SIGNALBOX_MODEL
    if (!model) {
      throw new ConfigError(
        'No model given: pass { model } to OpenAIProvider or set SIGNALBOX_MODEL (e.g. "llama3.1", "gpt-4o-mini").',
      )
    }
    this.model = model
    this.providerName = options.providerName ?? 'openai'
    this.#stream = options.stream ?? true
    this.#extraBody = options.extraBody ?? {}
    this.#client =
      options.client ??
      new OpenAI({
        baseURL: options.baseURL ?? process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
        // Local endpoints accept any key; the SDK refuses to start without one.
        apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? 'not-needed',
        maxRetries: 0,
        ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
      })
    this.baseURL = this.#client.baseURL
  }

  async complete(request: ProviderRequest, options: ProviderCallOptions): Promise<ProviderResponse> {
    const body: ChatCompletionCreateParamsBase = {
      ...this.#extraBody,
      model: this.model,
      messages: request.messages as ChatCompletionMessageParam[],
    }
    if (request.responseFormat) {
      const { name, schema, strict } = request.responseFormat
      body.response_format = { type: 'json_schema', json_schema: { name, schema, strict } }
    }
    // Some endpoints reject an empty tools array.
    if (request.tools.length > 0) body.tools = wireTools(request.tools)
    try {
      if (!this.#stream) {
        const completion = await this.#client.chat.completions.create(
          { ...body, stream: false },
          { signal: options.signal, maxRetries: 0 },
        )
        return fromCompletion(completion, this.model)
      }
      const stream = await this.#client.chat.completions.create(
        { ...body, stream: true, stream_options: { include_usage: true } },
        { signal: options.signal, maxRetries: 0 },
      )
      return await assembleStream(stream, this.model, options.onTextDelta)
    } catch (error) {
      throw this.#classify(error, options.signal)
    }
  }

  #classify(error: unknown, signal: AbortSignal): Error {
    if (error instanceof APIUserAbortError || signal.aborted) return new AbortedError('The model call was aborted.', error)
    const where = `${this.baseURL} (model "${this.model}")`
    if (error instanceof APIConnectionError) {
      return new ProviderError(
        `Could not reach the model endpoint ${where}: ${error.message.replace(/\.+$/, '')}. Is the server running?`,
        {
          retryable: true,
          cause: error,
          code: 'PROVIDER_UNREACHABLE',
        },
      )
    }
    if (error instanceof APIError) {
      const status = error.status
      const detail = error.message
      const retryAfterMs = parseRetryAfter(error.headers)
      if (status === 429 || status === 408 || status === 409 || (status !== undefined && status >= 500)) {
        const providerError = new ProviderError(`The model endpoint ${where} answered ${status}: ${detail}`, {
          status,
          retryable: true,
          cause: error,
          code: status === 429 ? 'PROVIDER_RATE_LIMITED' : 'PROVIDER_UNAVAILABLE',
        })
        if (retryAfterMs !== undefined) (providerError.details as Record<string, unknown>).retryAfterMs = retryAfterMs
        return providerError
      }
      const hint =
        status === 401 || status === 403
          ? 'Check the API key (apiKey or OPENAI_API_KEY).'
          : status === 404
            ? `Check that the model "${this.model}" exists at ${this.baseURL} (model or SIGNALBOX_MODEL) and that baseURL ends with the API root (e.g. /v1).`
            : status === 400 || status === 422
              ? 'The endpoint rejected the request; check the model supports tool calls and the tool schemas.'
              : 'See the endpoint message.'
      return new ProviderError(`The model endpoint ${where} refused the request (${status}): ${detail}. ${hint}`, {
        ...(status === undefined ? {} : { status }),
        retryable: false,
        cause: error,
        code: status === 401 || status === 403 ? 'PROVIDER_AUTH' : status === 404 ? 'PROVIDER_NOT_FOUND' : 'PROVIDER_REJECTED',
      })
    }
    if (error instanceof ProviderError) return error
    // The connection dropped mid-response (e.g. a reset while streaming): transient, worth a retry.
    if (isConnectionDrop(error)) {
      return new ProviderError(`The connection to the model endpoint ${where} was lost: ${describeChain(error)}.`, {
        retryable: true,
        cause: error,
        code: 'PROVIDER_UNREACHABLE',
      })
    }
    return new ProviderError(`The model call to ${where} failed: ${String((error as Error)?.message ?? error)}`, {
      retryable: false,
      cause: error,
    })
  }
}

const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
])

/** A network failure anywhere in the cause chain (undici reports a reset as `TypeError: terminated`). */
function isConnectionDrop(error: unknown): boolean {
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return true
    if (e instanceof TypeError && e.message === 'terminated') return true
  }
  return false
}

function describeChain(error: unknown): string {
  const parts: string[] = []
  for (let e = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    parts.push(e instanceof Error ? e.message : String(e))
  }
  return parts.join(': ')
}

function parseRetryAfter(headers: Headers | undefined): number | undefined {
  const ms = headers?.get?.('retry-after-ms')
  if (ms && Number.isFinite(Number(ms))) return Number(ms)
  const seconds = headers?.get?.('retry-after')
  if (seconds && Number.isFinite(Number(seconds))) return Number(seconds) * 1000
  return undefined
}

function toUsage(
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null | undefined,
): Usage | undefined {
  if (!usage) return undefined
  return { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens }
}

function fromCompletion(completion: ChatCompletion, model: string): ProviderResponse {
  const choice = completion.choices[0]
  if (!choice) throw new ProviderError('The model endpoint returned no choices.', { retryable: true })
  const message: AssistantMessage = { role: 'assistant', content: choice.message.content ?? null }
  const calls = choice.message.tool_calls?.filter((c) => c.type === 'function')
  if (calls && calls.length > 0) {
    message.tool_calls = calls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.function.name, arguments: c.function.arguments },
    }))
  }
  return {
    message,
    finishReason: choice.finish_reason,
    usage: toUsage(completion.usage),
    model: completion.model ?? model,
    ...(typeof completion.id === 'string' && completion.id !== '' ? { id: completion.id } : {}),
  }
}

/** Assembles text and tool-call deltas (arguments arrive in fragments, keyed by index). */
async function assembleStream(
  stream: AsyncIterable<ChatCompletionChunk>,
  model: string,
  onTextDelta: ((delta: string) => void) | undefined,
): Promise<ProviderResponse> {
  let text = ''
  let sawText = false
  let finishReason = 'stop'
  let usage: Usage | undefined
  let answeredBy = model
  let id: string | undefined
  const calls: ToolCall[] = []
  for await (const chunk of stream) {
    if (chunk.model) answeredBy = chunk.model
    if (typeof chunk.id === 'string' && chunk.id !== '') id ??= chunk.id
    if (chunk.usage) usage = toUsage(chunk.usage)
    for (const choice of chunk.choices) {
      const delta = choice.delta
      if (delta?.content) {
        sawText = true
        text += delta.content
        onTextDelta?.(delta.content)
      }
      for (const part of delta?.tool_calls ?? []) {
        let call = calls[part.index]
        if (!call) {
          call = { id: '', type: 'function', function: { name: '', arguments: '' } }
          calls[part.index] = call
        }
        if (part.id) call.id = part.id
        if (part.function?.name) call.function.name += part.function.name
        if (part.function?.arguments) call.function.arguments += part.function.arguments
      }
      if (choice.finish_reason) finishReason = choice.finish_reason
    }
  }
  const message: AssistantMessage = { role: 'assistant', content: sawText ? text : null }
  const toolCalls = calls.filter(Boolean)
  if (toolCalls.length > 0) message.tool_calls = toolCalls
  return { message, finishReason, usage, model: answeredBy, ...(id === undefined ? {} : { id }) }
}
