import type { ClientOptions, default as OpenAI } from 'openai'
import type { APIPromise } from 'openai/core/api-promise'
import type { Stream } from 'openai/core/streaming'
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions'
import { AbortedError, ConfigError, ProviderError } from '../errors.ts'
import type { AssistantMessage, ToolCall, Usage } from '../messages.ts'
import { callAborted, callAbortOf } from './call-abort.ts'
import { httpStatusError, notACompletion, otherCallError, unreachableError } from './endpoint-errors.ts'
import { fetchIsRouted, nodeHttpFetch } from './node-http-fetch.ts'
import type { Provider, ProviderCallOptions, ProviderRequest, ProviderResponse } from './provider.ts'
import { requestJson } from './request-json.ts'
import { RequestTie, tyingClient } from './request-tie.ts'
import { perToolList } from './tool-lists.ts'

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
  /**
   * Use an existing client instead of building one. It is called through
   * `client.chat.completions.create`, so a wrapper or a subclass sees every request; the client
   * built otherwise sends a body whose messages it serialized once per run.
   */
  client?: OpenAI
  /**
   * The `fetch` the client built here sends requests with (the SDK's `fetch` option). Default:
   * signalbox's over `node:http` keep-alive connections (a step costs a quarter less CPU than on
   * Node's `fetch` with 200 runs at once, measured); `globalThis.fetch` when the process routes `fetch` through a proxy (an undici global
   * dispatcher such as `ProxyAgent`, or `NODE_USE_ENV_PROXY`). Pass `fetch` (e.g. `globalThis.fetch`,
   * or one with an undici dispatcher of yours) to choose. Ignored with `client`.
   */
  fetch?: (input: string | URL | Request, init?: RequestInit) => Promise<Response>
  /**
   * Who serves the model, for telemetry (`gen_ai.provider.name`). Default `openai`: the OpenAI
   * API's conventions (an OpenAI-compatible server may be named, e.g. `ollama`).
   */
  providerName?: string
}

type OpenAISdk = typeof import('openai')

/**
 * The SDK, loaded at the first model call rather than with `@signalbox/core`: some 150 modules
 * that every process importing the package would otherwise load at start (a CLI command, a tool
 * host, an app on another provider), whether it calls an OpenAI endpoint or not.
 */
let sdk: Promise<OpenAISdk> | undefined
const loadSdk = (): Promise<OpenAISdk> => {
  sdk ??= import('openai').catch((error: unknown) => {
    sdk = undefined
    throw error
  })
  return sdk
}

/** The tools in the chat-completions wire format. */
const wireTools = perToolList(
  (t): ChatCompletionTool => ({
    type: 'function',
    function: { name: t.name, description: t.description, parameters: t.parameters },
  }),
)

/**
 * Any OpenAI-compatible chat-completions endpoint (OpenAI, Ollama, vLLM, LM Studio...) through
 * the `openai` SDK. The SDK's own retries are off: the agent owns the retry policy, so retries
 * are visible as `model.retry` events and testable with a simulated clock.
 */
export class OpenAIProvider implements Provider {
  readonly model: string
  readonly baseURL: string
  readonly providerName: string
  /** The client given, or built at the first call (with the SDK), then kept. */
  #client: OpenAI | undefined
  readonly #clientOptions: ClientOptions & { baseURL: string }
  /** The SDK's error classes, once it is loaded (the first call loads it). */
  #errors: Pick<OpenAISdk, 'APIConnectionError' | 'APIError' | 'APIUserAbortError'> | undefined
  /** Whether requests go as JSON text made here (`#create`); set with the client. */
  #textBody = false
  /**
   * Whether a call's abort is tied to the SDK's own controller of its request (`RequestTie`)
   * rather than handed over as a signal: the client built here ties them. Off for good should a
   * request ever go without the SDK handing its controller over.
   */
  #ties = false
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
    this.#client = options.client
    this.#clientOptions = {
      baseURL: options.baseURL ?? process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1',
      // Local endpoints accept any key; the SDK refuses to start without one.
      apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? 'not-needed',
      maxRetries: 0,
      ...(options.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
      ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
    }
    // The SDK keeps the base URL as given.
    this.baseURL = options.client?.baseURL ?? this.#clientOptions.baseURL
  }

  /** The client, with the SDK loaded (once per process). */
  async #load(): Promise<OpenAI> {
    const loaded = await loadSdk()
    // Only a client built here sends JSON text made here (see `#create`) and ties aborts.
    this.#textBody = this.#client === undefined
    this.#ties = this.#textBody
    // The transport is chosen when the client is built: a proxy set up later is not seen.
    this.#client ??= new (tyingClient(loaded.OpenAI))(
      this.#clientOptions.fetch !== undefined || fetchIsRouted()
        ? this.#clientOptions
        : { ...this.#clientOptions, fetch: nodeHttpFetch },
    )
    this.#errors = loaded
    return this.#client
  }

  async complete(request: ProviderRequest, options: ProviderCallOptions): Promise<ProviderResponse> {
    // The request's fields but the transcript, which `#create` adds.
    const fields: Omit<ChatCompletionCreateParamsBase, 'messages'> = { ...this.#extraBody, model: this.model }
    if (request.responseFormat) {
      const { name, schema, strict } = request.responseFormat
      fields.response_format = { type: 'json_schema', json_schema: { name, schema, strict } }
    }
    // Some endpoints reject an empty tools array.
    if (request.tools.length > 0) fields.tools = wireTools(request.tools)
    const { messages } = request
    let tie: RequestTie | undefined
    try {
      // After the first call, no wait: a model call per step is the hot path.
      const client = this.#errors !== undefined && this.#client !== undefined ? this.#client : await this.#load()
      // JSON text made here for the client built here, unless instrumentation wrapped `create`.
      const text = this.#textBody && !('__wrapped' in client.chat.completions.create)
      const abort = text && this.#ties ? callAbortOf(options) : undefined
      if (abort !== undefined) tie = new RequestTie(abort)
      if (!this.#stream) {
        const completion = (await this.#create(
          client,
          text,
          messages,
          { ...fields, stream: false },
          options,
          tie,
        )) as ChatCompletion
        this.#checkTied(tie)
        return fromCompletion(completion, this.model, this.#where)
      }
      const streamed = this.#create(
        client,
        text,
        messages,
        { ...fields, stream: true, stream_options: { include_usage: true } },
        options,
        tie,
      )
      const { data: stream, response } = await (streamed as APIPromise<Stream<ChatCompletionChunk>>).withResponse()
      this.#checkTied(tie)
      // A 200 that is not an event stream (a JSON error, a proxy's page) would read as an empty answer.
      const type = response.headers.get('content-type') ?? ''
      if (!type.includes('text/event-stream')) {
        const body = await bodyOf(response)
        stream.controller.abort()
        throw notACompletion(
          this.#where,
          `answered 200 with ${type || 'a body without a content type'} instead of an event stream of chat-completion chunks`,
          body,
        )
      }
      return await assembleStream(stream, this.model, options.onTextDelta, this.#where)
    } catch (error) {
      throw this.#classify(error, callAborted(options))
    } finally {
      tie?.untie()
    }
  }

  /** A reply came without the SDK handing its controller over: from now on, signals. */
  #checkTied(tie: RequestTie | undefined): void {
    if (tie !== undefined && !tie.tied) this.#ties = false
  }

  /**
   * One chat-completions request. With the client built here, the body goes as JSON text made by
   * `requestJson`, which serializes only the messages the run added since its last call (kept
   * under the run's key): `create` would serialize the whole transcript again. A client given (a
   * subclass such as `AzureOpenAI`, which reads the body to route the request; a wrapper that
   * watches `create`) and a `create` that instrumentation wrapped (its wrappers are marked
   * `__wrapped`) get `create`.
   */
  #create(
    client: OpenAI,
    text: boolean,
    messages: ProviderRequest['messages'],
    fields: Omit<ChatCompletionCreateParamsBase, 'messages'>,
    callOptions: ProviderCallOptions,
    tie: RequestTie | undefined,
  ): APIPromise<unknown> {
    if (!text) {
      return client.chat.completions.create(
        { ...fields, messages: messages as ChatCompletionMessageParam[] } as ChatCompletionCreateParamsBase,
        { signal: callOptions.signal, maxRetries: 0 },
      ) as APIPromise<unknown>
    }
    // A string body with a content type is sent as it is (the SDK's `buildBody`). A tied call
    // hands over no signal: its abort reaches the SDK's own controller of the request.
    return client.post('/chat/completions', {
      body: requestJson(messages, fields, callOptions.run),
      headers: { 'content-type': 'application/json' },
      stream: fields.stream ?? false,
      maxRetries: 0,
      ...(tie !== undefined ? { fetchOptions: tie.fetchOptions } : { signal: callOptions.signal }),
    })
  }

  get #where(): string {
    return `${this.baseURL} (model "${this.model}")`
  }

  #classify(error: unknown, aborted: boolean): Error {
    const sdkErrors = this.#errors
    if ((sdkErrors && error instanceof sdkErrors.APIUserAbortError) || aborted) {
      return new AbortedError('The model call was aborted.', error)
    }
    if (ProviderError.is(error)) return error
    const where = this.#where
    // The SDK failed to load: not a call failure of the endpoint.
    if (sdkErrors === undefined) return otherCallError(where, error)
    if (error instanceof sdkErrors.APIConnectionError) return unreachableError(where, error.message, error)
    if (error instanceof sdkErrors.APIError) {
      return httpStatusError(where, error.status, error.message, {
        cause: error,
        headers: error.headers,
        hints: {
          auth: 'Check the API key (apiKey or OPENAI_API_KEY).',
          notFound: `Check that the model "${this.model}" exists at ${this.baseURL} (model or SIGNALBOX_MODEL) and that baseURL ends with the API root (e.g. /v1).`,
        },
      })
    }
    return otherCallError(where, error)
  }
}

function toUsage(
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number } | null | undefined,
): Usage | undefined {
  if (!usage) return undefined
  return { promptTokens: usage.prompt_tokens, completionTokens: usage.completion_tokens, totalTokens: usage.total_tokens }
}

async function bodyOf(response: Response): Promise<string> {
  try {
    return await response.text()
  } catch {
    return '(unreadable body)'
  }
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null

function fromCompletion(completion: ChatCompletion, model: string, where: string): ProviderResponse {
  // The SDK returns whatever JSON (or text) a 200 carried: check it is a completion before reading it.
  const choices: unknown = isObject(completion) ? completion.choices : undefined
  if (!Array.isArray(choices) || (choices.length > 0 && !isObject((choices[0] as { message?: unknown }).message))) {
    throw notACompletion(where, 'answered 200 with a body that is not a chat completion', completion)
  }
  const choice = completion.choices[0]
  if (!choice) throw new ProviderError(`The model endpoint ${where} returned no choices.`, { retryable: true })
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
  where: string,
): Promise<ProviderResponse> {
  let text = ''
  let sawText = false
  let finishReason = 'stop'
  let usage: Usage | undefined
  let answeredBy = model
  let id: string | undefined
  const calls: ToolCall[] = []
  let chunks = 0
  for await (const chunk of stream) {
    if (!isObject(chunk) || !Array.isArray(chunk.choices))
      throw notACompletion(where, 'streamed an event that is not a chat-completion chunk', chunk)
    chunks++
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
  if (chunks === 0) throw notACompletion(where, 'streamed no chat-completion chunk', undefined)
  const message: AssistantMessage = { role: 'assistant', content: sawText ? text : null }
  const toolCalls = calls.filter(Boolean)
  if (toolCalls.length > 0) message.tool_calls = toolCalls
  return { message, finishReason, usage, model: answeredBy, ...(id === undefined ? {} : { id }) }
}
