/**
 * Any AI SDK language model (`LanguageModelV3`: Anthropic, Google, Bedrock, Mistral, Ollama,
 * OpenAI-compatible...) as a signalbox `Provider`. One model call per `complete`, streamed or
 * not: the AI SDK's own loop (`generateText`, `streamText`) is not used, since the agent is the
 * loop, with its hooks, approvals and retry policy.
 */
import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3StreamPart,
  SharedV3Warning,
} from '@ai-sdk/provider'
import {
  type AssistantMessage,
  ConfigError,
  type FinishReason,
  type Provider,
  type ProviderCallOptions,
  ProviderError,
  type ProviderRequest,
  type ProviderResponse,
  type ToolCall,
  type Usage,
} from '@signalbox/core'
import { type CallSite, classifyCallError } from './call-errors.ts'
import { callOptionsOf } from './prompt.ts'

/** Settings sent with every call (what `generateText` calls call settings), and provider options. */
export type AiSdkCallSettings = Pick<
  LanguageModelV3CallOptions,
  | 'maxOutputTokens'
  | 'temperature'
  | 'stopSequences'
  | 'topP'
  | 'topK'
  | 'presencePenalty'
  | 'frequencyPenalty'
  | 'seed'
  | 'headers'
  | 'providerOptions'
>

export interface AiSdkProviderOptions {
  /** Stream the reply (text deltas become `text.delta` events). Default true. */
  stream?: boolean
  /** Temperature, maximum output tokens, headers, provider options...: sent with every call. */
  settings?: AiSdkCallSettings
  /**
   * Told what the model did not support in a call (a setting it ignored, a JSON schema it could
   * only take as plain JSON mode...). Default: ignored.
   */
  onWarning?: (warning: SharedV3Warning) => void
}

export class AiSdkProvider implements Provider {
  /** The model id, as the AI SDK model reports it. */
  readonly model: string
  /** The AI SDK provider id (`anthropic.messages`, `openai.chat`...). */
  readonly providerId: string
  /** Who serves the model as telemetry names it (`gen_ai.provider.name`): the convention's name for the provider id. */
  readonly providerName: string
  readonly #languageModel: LanguageModelV3
  readonly #stream: boolean
  readonly #settings: AiSdkCallSettings
  readonly #onWarning: ((warning: SharedV3Warning) => void) | undefined

  constructor(model: LanguageModelV3, options: AiSdkProviderOptions = {}) {
    const version = (model as { specificationVersion?: unknown } | undefined)?.specificationVersion
    if (version !== 'v3') {
      throw new ConfigError(
        `AiSdkProvider takes an AI SDK language model of specification v3 (ai 6, @ai-sdk/* provider packages 2.x/3.x), e.g. createAnthropic()('claude-sonnet-4-5'); got ${version === undefined ? 'no model' : `one of specification ${String(version)}: upgrade its provider package`}.`,
      )
    }
    this.#languageModel = model
    this.model = model.modelId
    this.providerId = model.provider
    this.providerName = conventionName(model.provider)
    this.#stream = options.stream ?? true
    this.#settings = options.settings ?? {}
    this.#onWarning = options.onWarning
  }

  async complete(request: ProviderRequest, options: ProviderCallOptions): Promise<ProviderResponse> {
    const call: LanguageModelV3CallOptions = { ...this.#settings, ...callOptionsOf(request), abortSignal: options.signal }
    const site: CallSite = { provider: this.providerId, modelId: this.model }
    let streamedAs: string | undefined
    try {
      if (!this.#stream) {
        const result = await this.#languageModel.doGenerate(call)
        this.#warn(result.warnings)
        return fromResult(result, this.model)
      }
      const { stream, response } = await this.#languageModel.doStream(call)
      streamedAs = response?.headers?.['content-type']
      return await assemble(stream, this.model, site, options.onTextDelta, (warnings) => this.#warn(warnings))
    } catch (error) {
      throw notAStream(classifyCallError(error, options.signal, site), streamedAs)
    }
  }

  #warn(warnings: readonly SharedV3Warning[] | undefined): void {
    if (!this.#onWarning || !warnings) return
    for (const warning of warnings) this.#onWarning(warning)
  }
}

/**
 * A stream that failed while the reply was not a stream at all (a JSON error body, a proxy's page
 * answered with 200): the body is not at hand any more, its type says what came back.
 */
function notAStream(error: Error, contentType: string | undefined): Error {
  if (!ProviderError.is(error) || !contentType || /event-?stream/i.test(contentType)) return error
  return new ProviderError(`${error.message.replace(/\.$/, '')}; the reply was ${contentType}, not an event stream.`, {
    ...(error.status === undefined ? {} : { status: error.status }),
    retryable: false,
    cause: error.cause,
    code: error.code,
  })
}

/** The AI SDK's finish reasons in the chat-completions words the agent and its events use. */
function finishReasonOf(reason: { unified: string; raw?: string | undefined } | undefined, toolCalls: number): FinishReason {
  if (reason === undefined) return toolCalls > 0 ? 'tool_calls' : 'stop'
  switch (reason.unified) {
    case 'tool-calls':
      return 'tool_calls'
    case 'content-filter':
      return 'content_filter'
    case 'stop':
    case 'length':
      return reason.unified
    default:
      return reason.raw ?? reason.unified
  }
}

function usageOf(
  usage: { inputTokens: { total: number | undefined }; outputTokens: { total: number | undefined } } | undefined,
): Usage | undefined {
  const prompt = usage?.inputTokens.total
  const completion = usage?.outputTokens.total
  if (prompt === undefined && completion === undefined) return undefined
  return { promptTokens: prompt ?? 0, completionTokens: completion ?? 0, totalTokens: (prompt ?? 0) + (completion ?? 0) }
}

function messageOf(text: string | null, calls: ToolCall[]): AssistantMessage {
  const message: AssistantMessage = { role: 'assistant', content: text }
  if (calls.length > 0) message.tool_calls = calls
  return message
}

/** A tool call the agent runs; calls the provider ran itself (`providerExecuted`) are its own business. */
function toolCallOf(part: Extract<LanguageModelV3Content, { type: 'tool-call' }>): ToolCall | undefined {
  if (part.providerExecuted) return undefined
  return { id: part.toolCallId, type: 'function', function: { name: part.toolName, arguments: part.input } }
}

function fromResult(result: Awaited<ReturnType<LanguageModelV3['doGenerate']>>, model: string): ProviderResponse {
  let text: string | null = null
  const calls: ToolCall[] = []
  for (const part of result.content) {
    if (part.type === 'text') text = (text ?? '') + part.text
    else if (part.type === 'tool-call') {
      const call = toolCallOf(part)
      if (call) calls.push(call)
    }
  }
  return {
    message: messageOf(text, calls),
    finishReason: finishReasonOf(result.finishReason, calls.length),
    usage: usageOf(result.usage),
    model: result.response?.modelId ?? model,
    ...(result.response?.id ? { id: result.response.id } : {}),
  }
}

/** Reads the stream to its `finish`: text deltas as they come, complete tool calls, usage. */
async function assemble(
  stream: ReadableStream<LanguageModelV3StreamPart>,
  model: string,
  site: CallSite,
  onTextDelta: ((delta: string) => void) | undefined,
  onWarnings: (warnings: SharedV3Warning[]) => void,
): Promise<ProviderResponse> {
  let text: string | null = null
  const calls: ToolCall[] = []
  let answeredBy = model
  let responseId: string | undefined
  let finish: Extract<LanguageModelV3StreamPart, { type: 'finish' }> | undefined
  const reader = stream.getReader()
  try {
    for (;;) {
      const { done, value: part } = await reader.read()
      if (done) break
      switch (part.type) {
        case 'text-delta':
          if (part.delta.length === 0) break
          text = (text ?? '') + part.delta
          onTextDelta?.(part.delta)
          break
        case 'tool-call': {
          const call = toolCallOf(part)
          if (call) calls.push(call)
          break
        }
        case 'stream-start':
          onWarnings(part.warnings)
          break
        case 'response-metadata':
          if (part.modelId) answeredBy = part.modelId
          if (part.id) responseId ??= part.id
          break
        case 'finish':
          finish = part
          break
        case 'error':
          throw part.error
        default:
        // reasoning, sources, files, raw chunks, tool input as it streams: not part of the transcript.
      }
    }
  } finally {
    reader.releaseLock()
  }
  if (!finish) {
    throw new ProviderError(`The ${site.provider} model "${site.modelId}" ended its stream without finishing.`, {
      retryable: true,
      code: 'PROVIDER_UNREACHABLE',
    })
  }
  return {
    message: messageOf(text, calls),
    finishReason: finishReasonOf(finish.finishReason, calls.length),
    usage: usageOf(finish.usage),
    model: answeredBy,
    ...(responseId ? { id: responseId } : {}),
  }
}

/** The OpenTelemetry GenAI conventions' well-known provider names, by the AI SDK provider id's first part. */
const CONVENTION_NAMES: Record<string, string> = {
  openai: 'openai',
  anthropic: 'anthropic',
  'amazon-bedrock': 'aws.bedrock',
  bedrock: 'aws.bedrock',
  'azure-openai': 'azure.ai.openai',
  azure: 'azure.ai.openai',
  google: 'gcp.gemini',
  'google-vertex': 'gcp.vertex_ai',
  vertex: 'gcp.vertex_ai',
  mistral: 'mistral_ai',
  groq: 'groq',
  deepseek: 'deepseek',
  cohere: 'cohere',
  perplexity: 'perplexity',
  xai: 'x_ai',
}

function conventionName(providerId: string): string {
  const family = providerId.split('.')[0] ?? providerId
  return CONVENTION_NAMES[family] ?? family
}
