import type { Hooks } from '@signalbox/core'
import { HookChain } from '@signalbox/core/internal'
import { describe, expect, it } from 'vitest'

/**
 * How `HookChain` reads each hook point's answer, and that one hook and the same hook followed by
 * one that changes nothing answer alike: each answer below, returned and resolved, and a throw and
 * a rejection, at every point.
 */
const signal = new AbortController().signal
const base = { agentId: 'a', runId: 'r', turn: 1, signal }
const user = { role: 'user' as const, content: 'hi' }
const tool = { name: 't', description: 'd', parameters: {} }
const contexts = {
  beforeTurn: { ...base, messages: [user] },
  beforeProviderCall: { ...base, messages: [user], tools: [tool] },
  beforeToolExecution: { ...base, callId: 'c1', toolName: 't', input: { x: 1 } },
  afterToolExecution: { ...base, callId: 'c1', toolName: 't', input: { x: 1 }, output: 'raw', isError: false },
  afterTurn: { ...base, reply: { role: 'assistant' as const, content: 'ok' }, toolResults: [], messages: [user] },
}
type Point = keyof typeof contexts

const answers: Record<Point, unknown[]> = {
  beforeTurn: [undefined, null, { stop: true, reason: 'budget' }, { stop: true }, 'go', 7],
  beforeProviderCall: [undefined, [user, user], { tools: [] }, { messages: [] }, { messages: 'x' }, 'x'],
  beforeToolExecution: [
    undefined,
    { action: 'allow' },
    { action: 'deny', reason: 'no' },
    { action: 'respond', result: 'r' },
    { authorize: false },
    { authorize: true, mockResult: 'm' },
    { action: 'maybe' },
    'yes',
  ],
  afterToolExecution: [undefined, 'masked', { output: 'o', isError: true }, { output: 'o' }, { isError: true }, 3],
  afterTurn: [undefined, 'ignored'],
}

/** What the chain's method answers: its value, or its error's name, code and message. */
async function outcome(chain: HookChain, point: Point): Promise<unknown> {
  try {
    return { value: await (chain[point] as (c: unknown) => Promise<unknown>)(contexts[point]) }
  } catch (error) {
    const e = error as { name: string; code?: string; message: string }
    return { error: [e.name, e.code, e.message] }
  }
}

const shapes = {
  sync: (answer: unknown) => () => answer,
  async: (answer: unknown) => async () => answer,
}

describe('HookChain: one hook and a chain read answers alike', () => {
  for (const point of Object.keys(contexts) as Point[]) {
    for (const [shape, make] of Object.entries(shapes)) {
      it(`${point}, ${shape} hooks`, async () => {
        for (const answer of answers[point]) {
          const hook = { [point]: make(answer) } as Hooks
          const alone = await outcome(new HookChain(hook), point)
          const chained = await outcome(new HookChain([hook, { [point]: () => undefined } as Hooks]), point)
          expect(chained, JSON.stringify(answer)).toEqual(alone)
        }
      })
    }

    it(`${point}: a throw and a rejection are a HookError naming the point, alone and chained`, async () => {
      for (const fn of [
        () => {
          throw new Error('down')
        },
        async () => {
          throw new Error('down')
        },
      ]) {
        for (const hooks of [{ [point]: fn }, [{ [point]: fn }, { [point]: () => undefined }]] as (Hooks | Hooks[])[]) {
          const got = (await outcome(new HookChain(hooks), point)) as { error?: unknown[] }
          expect(got.error?.slice(0, 2)).toEqual(['HookError', 'HOOK_FAILED'])
          expect(String(got.error?.[2])).toContain(point)
          expect(String(got.error?.[2])).toContain('down')
        }
      }
    })
  }

  it('reads the answers as documented (one hook)', async () => {
    const one = (point: Point, answer: unknown) => outcome(new HookChain({ [point]: () => answer } as Hooks), point)
    expect(await one('beforeTurn', { stop: true, reason: 'budget' })).toEqual({ value: { stop: true, reason: 'budget' } })
    expect(await one('beforeProviderCall', { tools: [] })).toEqual({ value: { messages: [user], tools: [] } })
    expect(await one('beforeToolExecution', { authorize: true, mockResult: 'm' })).toEqual({
      value: { action: 'respond', result: 'm' },
    })
    expect(await one('afterToolExecution', 'masked')).toEqual({ value: { output: 'masked', isError: false } })
    expect(await one('afterToolExecution', { output: 'o', isError: true })).toEqual({ value: { output: 'o', isError: true } })
    expect(await one('afterTurn', 'ignored')).toEqual({ value: undefined })
    expect(((await one('beforeProviderCall', { messages: 'x' })) as { error: unknown[] }).error[2]).toContain('must be arrays')
  })

  it('chains rewrites: each hook reads the one before it', async () => {
    const chain = new HookChain([
      { afterToolExecution: ({ output }) => `${output}1`, beforeProviderCall: ({ messages }) => [...messages, user] },
      { afterToolExecution: async ({ output }) => `${output}2`, beforeProviderCall: async ({ messages }) => messages.slice(1) },
    ])
    expect(await chain.afterToolExecution(contexts.afterToolExecution)).toEqual({ output: 'raw12', isError: false })
    expect(await chain.beforeProviderCall(contexts.beforeProviderCall)).toEqual({ messages: [user], tools: [tool] })
  })
})
