/**
 * Which model the demos talk to: a real OpenAI-compatible endpoint when `SIGNALBOX_MODEL` is set
 * (and `--scripted` is not passed), otherwise the scripted model server on localhost. Either way
 * the agent goes through the real `OpenAIProvider` over HTTP.
 */
import { OpenAIProvider } from '@signalbox/core'
import { type ScriptedModelServer, type Scripts, startScriptedModelServer } from '@signalbox/core/testing'

export interface DemoModel {
  /** The scripted server, when offline. */
  readonly server: ScriptedModelServer | undefined
  /** A provider for one scripted conversation (`model` names the script); the real endpoint ignores it. */
  provider(model: string): OpenAIProvider
  /** One line: which model, where. */
  describe(model: string): string
  /** Throws if a scripted conversation was not played to the end or got an unexpected request. */
  assertDone(): void
  close(): Promise<void>
}

export function useRealEndpoint(argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.SIGNALBOX_MODEL) && !argv.includes('--scripted')
}

export async function openDemoModel(options: { scripts: Scripts; argv?: string[]; env?: NodeJS.ProcessEnv }): Promise<DemoModel> {
  if (useRealEndpoint(options.argv, options.env)) {
    // Env defaults: OPENAI_BASE_URL, OPENAI_API_KEY, SIGNALBOX_MODEL.
    const real = new OpenAIProvider()
    return {
      server: undefined,
      provider: () => real,
      describe: () => `${real.model} at ${real.baseURL} (SIGNALBOX_MODEL; pass --scripted to run offline)`,
      assertDone: () => {},
      close: async () => {},
    }
  }
  const server = await startScriptedModelServer({ scripts: options.scripts })
  return {
    server,
    provider: (model) => new OpenAIProvider({ baseURL: server.url, apiKey: 'scripted', model }),
    describe: (model) => `"${model}", the scripted model at ${server.url} (offline; set SIGNALBOX_MODEL for a real one)`,
    assertDone: () => server.assertDone(),
    close: () => server.close(),
  }
}
