/**
 * AI SDK errors as signalbox `ProviderError`s, classified as `OpenAIProvider` classifies its own
 * (same codes, same retry rule): the agent's retry policy and events work the same on any model.
 * The AI SDK's `isInstance` checks work across copies of `@ai-sdk/provider`.
 */
import {
  APICallError,
  EmptyResponseBodyError,
  InvalidResponseDataError,
  JSONParseError,
  LoadAPIKeyError,
  LoadSettingError,
  NoContentGeneratedError,
  TypeValidationError,
} from '@ai-sdk/provider'
import { AbortedError, ProviderError, SignalboxError } from '@signalbox/core'
import { httpStatusError, otherCallError, preview, unreachableError } from '@signalbox/core/internal'

export interface CallSite {
  /** The AI SDK provider id (`openai.chat`, `anthropic.messages`...). */
  provider: string
  modelId: string
}

const isAbort = (error: unknown): boolean =>
  (error instanceof Error || (typeof error === 'object' && error !== null)) && (error as { name?: unknown }).name === 'AbortError'

export function classifyCallError(error: unknown, signal: AbortSignal, site: CallSite): Error {
  if (signal.aborted || isAbort(error)) return new AbortedError('The model call was aborted.', error)
  if (SignalboxError.is(error)) return error
  const model = `${site.provider} model "${site.modelId}"`
  if (APICallError.isInstance(error)) {
    const where = `${error.url} (${model})`
    const status = error.statusCode
    if (status === undefined) return unreachableError(where, error.message, error)
    // The HTTP call succeeded, but the body is not what the provider reads (e.g. `{}`).
    if (status >= 200 && status < 300) {
      return new ProviderError(
        `The model endpoint ${where} answered ${status} with something the provider cannot read (${error.message})${error.responseBody === undefined ? '' : `: ${preview(error.responseBody)}`}.`,
        { status, retryable: false, cause: error },
      )
    }
    const detail = error.responseBody ? `${error.message} ${preview(error.responseBody)}` : error.message
    return httpStatusError(where, status, detail, {
      cause: error,
      headers: error.responseHeaders,
      hints: {
        auth: `Check the ${site.provider} API key (the provider's apiKey option or its environment variable).`,
        notFound: `Check that the model "${site.modelId}" exists for ${site.provider} and the provider's baseURL.`,
      },
    })
  }
  if (LoadAPIKeyError.isInstance(error) || LoadSettingError.isInstance(error)) {
    return new ProviderError(`The ${model} is not configured: ${error.message}`, {
      retryable: false,
      cause: error,
      code: 'PROVIDER_AUTH',
    })
  }
  if (
    TypeValidationError.isInstance(error) ||
    JSONParseError.isInstance(error) ||
    InvalidResponseDataError.isInstance(error) ||
    EmptyResponseBodyError.isInstance(error)
  ) {
    const body = TypeValidationError.isInstance(error)
      ? error.value
      : JSONParseError.isInstance(error)
        ? error.text
        : InvalidResponseDataError.isInstance(error)
          ? error.data
          : undefined
    return new ProviderError(
      `The ${model} answered with something the provider cannot read (${error.message.split('\n')[0]})${body === undefined ? '' : `: ${preview(body)}`}.`,
      { retryable: false, cause: error },
    )
  }
  if (NoContentGeneratedError.isInstance(error)) {
    return new ProviderError(`The ${model} generated no content.`, { retryable: true, cause: error })
  }
  return otherCallError(model, error)
}
