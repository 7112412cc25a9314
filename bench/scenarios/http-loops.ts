/**
 * The HTTP variants without the peer frameworks: the hand-written loops, the design's floor and
 * signalbox, as "one run" functions against the scripted model server. `http.ts` adds the peers;
 * the instruction counts (`bench/instructions.ts`) load only these, so a process under valgrind
 * does not start the peers' hundreds of modules.
 */
import { OpenAIProvider } from '@signalbox/core'
import OpenAI from 'openai'
import { type Chat, fetchChat, openaiChat, openaiStreamChat, runBareLoop } from '../lib/bare-loops.ts'
import { benchAgent, runAgent } from '../lib/signalbox.ts'
import { modelFor, PROMPT } from '../lib/workload.ts'
import { designFloorRun } from './xstate-floor.ts'

export const HTTP_API_KEY = 'bench'

export interface HttpVariantOptions {
  url: string
  steps: number
  withHooks: boolean
  /** Default `bench-<steps>`; the heap scenario parks runs on `park-<steps>`. */
  model?: string
}

/** The loops' HTTP variants; each run checks it took `steps` tool steps. */
export function httpLoopRunners({ url, steps, withHooks, model = modelFor(steps) }: HttpVariantOptions) {
  // The client configuration signalbox's OpenAIProvider builds for itself.
  const client = new OpenAI({ baseURL: url, apiKey: HTTP_API_KEY, maxRetries: 0 })
  const checked = (ran: number) => {
    if (ran !== steps) throw new Error(`expected ${steps} tool steps, ran ${ran}`)
    return ran
  }
  const bare = (chat: Chat) => async () => checked(await runBareLoop(chat, PROMPT))
  // `onFetch`: the client's requests on Node's fetch (undici), as the SDK loops send theirs,
  // instead of signalbox's default transport over node:http.
  const agent = (stream: boolean, hooks: boolean, onFetch = false) => {
    const a = benchAgent(
      new OpenAIProvider({ baseURL: url, model, apiKey: HTTP_API_KEY, stream, ...(onFetch ? { fetch: globalThis.fetch } : {}) }),
      hooks,
    )
    return async () => checked(await runAgent(a))
  }
  return {
    fetch: bare(fetchChat(url, model, HTTP_API_KEY)),
    openai: bare(openaiChat(client, model)),
    openaiStream: bare(openaiStreamChat(client, model)),
    signalbox: agent(false, false),
    signalboxStream: agent(true, false),
    signalboxOnFetch: agent(false, false, true),
    // The loop signalbox's chart is built on, without signalbox, on the same SDK calls as the SDK loops.
    floor: designFloorRun(openaiChat(client, model), steps),
    floorStream: designFloorRun(openaiStreamChat(client, model), steps),
    ...(withHooks
      ? {
          signalboxHooks: agent(false, true),
          signalboxStreamHooks: agent(true, true),
          floorHooks: designFloorRun(openaiChat(client, model), steps, 5),
          floorStreamHooks: designFloorRun(openaiStreamChat(client, model), steps, 5),
        }
      : {}),
  }
}
