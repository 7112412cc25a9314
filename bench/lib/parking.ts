/**
 * Runs parked on their model call over HTTP: the scripted server answers `park-<k>` with tool
 * calls until the conversation holds k tool results, then holds that call until released. Two
 * control "models" let the bench (in another process) count the held calls and release them.
 */
import type { RecordedRequest, ScriptStep } from '@signalbox/core/testing'
import { countToolResults, FINAL_ANSWER } from './workload.ts'

const COUNT_MODEL = 'park-control-count'
const RELEASE_MODEL = 'park-control-release'
const PARK = /^park-(\d+)$/

export const parkModel = (parkAfter: number): string => `park-${parkAfter}`

/** Server side: answers the park and control models, `undefined` for any other model. */
export function parkingResponder(): (request: RecordedRequest) => ScriptStep | Promise<ScriptStep> | undefined {
  const held: (() => void)[] = []
  return (request) => {
    if (request.model === COUNT_MODEL) return { content: String(held.length) }
    if (request.model === RELEASE_MODEL) {
      const released = held.splice(0)
      for (const resolve of released) resolve()
      return { content: String(released.length) }
    }
    const match = PARK.exec(request.model)
    if (!match) return undefined
    const done = countToolResults(request.messages)
    if (done < Number(match[1])) return { toolCalls: [{ name: 'noop', arguments: { step: done } }] }
    return new Promise<ScriptStep>((resolve) => held.push(() => resolve({ content: FINAL_ANSWER })))
  }
}

/** What the heap scenario needs from a parking model, in this process or behind HTTP. */
export interface Parking {
  /** Resolves once `count` runs are waiting on the model. */
  parked(count: number, signal: AbortSignal): Promise<void>
  release(signal: AbortSignal): Promise<void>
}

/** Bench side: the control calls to the server at `url`. */
export function httpParking(url: string): Parking {
  const ask = async (model: string, signal: AbortSignal): Promise<number> => {
    const res = await fetch(`${url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model, messages: [{ role: 'user', content: model }] }),
      signal,
    })
    const body = (await res.json()) as { choices: { message: { content: string } }[] }
    return Number(body.choices[0]?.message.content)
  }
  return {
    async parked(count, signal) {
      while ((await ask(COUNT_MODEL, signal)) < count) await new Promise((resolve) => setTimeout(resolve, 20))
    },
    async release(signal) {
      await ask(RELEASE_MODEL, signal)
    },
  }
}
