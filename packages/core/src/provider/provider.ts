import type { AssistantMessage, Message, Usage } from '../messages.ts'
import type { ResponseFormat } from '../output.ts'

/** A tool as the model sees it: name, description, JSON Schema of the arguments. */
export interface ToolSpec {
  name: string
  description: string
  parameters: Record<string, unknown>
}

export interface ProviderRequest {
  messages: Message[]
  tools: ToolSpec[]
  /** The JSON Schema the final answer must match (`createAgent({ output })`). */
  responseFormat?: ResponseFormat
}

export type FinishReason = 'stop' | 'tool_calls' | 'length' | 'content_filter' | (string & {})

export interface ProviderResponse {
  message: AssistantMessage
  finishReason: FinishReason
  usage: Usage | undefined
  /** The model that answered, as the endpoint reported it. */
  model: string
  /** The reply's id, as the endpoint gave it (a chat completion's `id`), for telemetry. */
  id?: string
}

export interface ProviderCallOptions {
  /**
   * Aborts when the call should stop (its run cancelled). The agent makes it when it is first
   * read (`options.signal`, or a copy of the options): read it where it is used or handed on.
   */
  signal: AbortSignal
  /** Called for each streamed text fragment, in order. */
  onTextDelta?: (delta: string) => void
  /**
   * Stands for the run making the call: the same object on each of its calls, another for each
   * run, unreachable once the run is. Only a key: a provider may keep per-run state under it in a
   * `WeakMap` (`OpenAIProvider` keeps the last request's text, to serialize only what is new).
   */
  run?: object
}

/**
 * A chat-completions model. `complete` makes one attempt; retrying transient failures is the
 * agent's job (so there is one retry policy, visible as events), not the provider's.
 */
export interface Provider {
  readonly model: string
  /**
   * Who serves the model, as telemetry names it (`gen_ai.provider.name`: `openai`, `anthropic`,
   * `aws.bedrock`...). Optional: tracing falls back to its own option, else `_OTHER`.
   */
  readonly providerName?: string
  /** The endpoint's base URL, for telemetry (`server.address`, `server.port`). */
  readonly baseURL?: string
  complete(request: ProviderRequest, options: ProviderCallOptions): Promise<ProviderResponse>
}
