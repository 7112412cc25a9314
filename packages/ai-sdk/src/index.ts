/**
 * `@signalbox/ai-sdk`: any AI SDK language model as a signalbox model.
 *
 * @example
 * ```ts
 * import { createAnthropic } from '@ai-sdk/anthropic'
 * import { AiSdkProvider } from '@signalbox/ai-sdk'
 *
 * const agent = createAgent({ provider: new AiSdkProvider(createAnthropic()('claude-sonnet-4-5')), tools })
 * ```
 */
export { type AiSdkCallSettings, AiSdkProvider, type AiSdkProviderOptions } from './ai-sdk-provider.ts'
