/**
 * What the adapter tells telemetry: the provider by the OpenTelemetry GenAI conventions' name, and
 * the reply's id and model (`model.response`), streamed or not.
 */
import { AiSdkProvider } from '@signalbox/ai-sdk'
import { type AgentEventOf, createAgent } from '@signalbox/core'
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test'
import { describe, expect, it } from 'vitest'

const usage = {
  inputTokens: { total: 3, noCache: 3, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 2, text: 2, reasoning: undefined },
}

describe('AiSdkProvider for telemetry', () => {
  it('names the provider as the conventions do', () => {
    const named = (provider: string) => new AiSdkProvider(new MockLanguageModelV3({ provider, modelId: 'm' })).providerName
    expect(named('anthropic.messages')).toBe('anthropic')
    expect(named('openai.chat')).toBe('openai')
    expect(named('amazon-bedrock')).toBe('aws.bedrock')
    expect(named('google.generative-ai')).toBe('gcp.gemini')
    expect(named('mistral.chat')).toBe('mistral_ai')
    expect(named('ollama.chat')).toBe('ollama')
  })

  it.each([false, true])('reports the reply’s id and model (stream: %s)', async (stream) => {
    const model = new MockLanguageModelV3({
      provider: 'anthropic.messages',
      modelId: 'claude-x',
      doGenerate: {
        content: [{ type: 'text', text: 'hi' }],
        finishReason: { unified: 'stop', raw: 'end_turn' },
        usage,
        warnings: [],
        response: { id: 'msg_42', modelId: 'claude-x-2026', timestamp: new Date(0) },
      },
      doStream: {
        stream: convertArrayToReadableStream([
          { type: 'stream-start', warnings: [] },
          { type: 'response-metadata', id: 'msg_42', modelId: 'claude-x-2026', timestamp: new Date(0) },
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'hi' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'end_turn' }, usage },
        ]),
      },
    })
    const agent = createAgent({ provider: new AiSdkProvider(model, { stream }) })
    const responses: AgentEventOf<'model.response'>[] = []
    agent.on('model.response', (event) => responses.push(event))
    await agent.run('hello')
    expect(responses.map((r) => [r.model, r.responseId])).toEqual([['claude-x-2026', 'msg_42']])
  })
})
