import { type ScriptedModelServer, type Scripts, startScriptedModelServer } from '@signalbox/core/testing'
import OpenAI from 'openai'
import { afterEveryTest } from '../../../../test/support/lifecycle.ts'

const open: ScriptedModelServer[] = []
afterEveryTest(async () => {
  await Promise.all(open.splice(0).map((server) => server.close()))
})

/** A scripted server closed after the test, and a real openai client pointed at it. */
export async function serve(scripts: Scripts): Promise<{ server: ScriptedModelServer; client: OpenAI }> {
  const server = await startScriptedModelServer({ scripts })
  open.push(server)
  return { server, client: new OpenAI({ baseURL: server.url, apiKey: 'test', maxRetries: 0 }) }
}

export const weatherTool = {
  type: 'function' as const,
  function: {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
}
