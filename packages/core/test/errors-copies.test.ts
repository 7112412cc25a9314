/**
 * Two copies of @signalbox/core in one process (what npm leaves behind when two packages want
 * different versions): an error made by one copy is still recognised by the other.
 */
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'

type Core = typeof import('@signalbox/core')
type CoreBus = typeof import('@signalbox/core/bus')
type CoreTesting = typeof import('@signalbox/core/testing')
interface Copy {
  core: Core
  bus: CoreBus
  testing: CoreTesting
}

const PACKAGE = fileURLToPath(new URL('..', import.meta.url))
let root: string
let a: Copy
let b: Copy

/** A copy of the package's files in its own folder; its dependencies are the package's own. */
async function loadCopy(name: string): Promise<Copy> {
  const dir = path.join(root, name)
  await cp(path.join(PACKAGE, 'src'), path.join(dir, 'src'), { recursive: true })
  await cp(path.join(PACKAGE, 'package.json'), path.join(dir, 'package.json'))
  await symlink(path.join(PACKAGE, 'node_modules'), path.join(dir, 'node_modules'), 'dir')
  const load = (file: string) => import(pathToFileURL(path.join(dir, 'src', file)).href)
  return { core: await load('index.ts'), bus: await load('bus/index.ts'), testing: await load('testing/index.ts') }
}

beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'signalbox-copies-'))
  a = await loadCopy('a')
  b = await loadCopy('b')
})

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true })
})

describe('SignalboxError.is across two copies of the package', () => {
  it('loads two distinct copies (instanceof fails across them)', () => {
    expect(a.core.SignalboxError).not.toBe(b.core.SignalboxError)
    expect(new b.core.AbortedError()).not.toBeInstanceOf(a.core.SignalboxError)
    expect(new a.core.AbortedError()).not.toBeInstanceOf(b.core.AbortedError)
  })

  it("recognises the other copy's errors, with or without a code", () => {
    const aborted = new b.core.AbortedError()
    expect(a.core.SignalboxError.is(aborted)).toBe(true)
    expect(a.core.SignalboxError.is(aborted, a.core.ErrorCode.ABORTED)).toBe(true)
    expect(a.core.SignalboxError.is(aborted, a.core.ErrorCode.TIMEOUT)).toBe(false)
    expect(b.core.SignalboxError.is(new a.core.ToolError('MY_CODE', 'no'), 'MY_CODE')).toBe(true)
  })

  it("a subclass's is: that class and its subclasses only, in either copy", () => {
    const timeout = new b.bus.BusTimeoutError('a.b', 10)
    expect(a.bus.BusError.is(timeout)).toBe(true)
    expect(a.bus.BusTimeoutError.is(timeout)).toBe(true)
    expect(a.bus.BusNoRespondersError.is(timeout)).toBe(false)
    expect(a.bus.BusError.is(new b.core.AbortedError())).toBe(false)
    expect(a.core.ToolError.is(new b.core.FatalToolError('X', 'x'))).toBe(false)
    expect(a.core.FatalToolError.is(new b.core.FatalToolError('X', 'x'))).toBe(true)
  })

  it('is false for anything else', () => {
    const lookalike = Object.assign(new Error('x'), { code: 'ABORTED', name: 'AbortedError' })
    for (const value of [lookalike, { code: 'ABORTED' }, null, undefined, 'ABORTED', 42]) {
      expect(a.core.SignalboxError.is(value)).toBe(false)
    }
  })

  it("classifies the other copy's abort as an abort", () => {
    expect(a.core.isAbortError(new b.core.AbortedError())).toBe(true)
    expect(a.core.isAbortError(new b.core.TimeoutError('slow'))).toBe(false)
  })

  it("a tool throwing the other copy's FatalToolError ends the run", async () => {
    const boom = a.core.tool({
      name: 'boom',
      description: 'Boom.',
      schema: z.object({}),
      execute: () => {
        throw new b.core.FatalToolError('CHILD_GAVE_UP', 'the child failed three times')
      },
    })
    const provider = new a.testing.ScriptedProvider({ script: [{ toolCalls: [{ name: 'boom', arguments: {} }] }] })
    const error = await a.core
      .createAgent({ provider, tools: [boom] })
      .run('go')
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    expect(a.core.RunFailedError.is(error)).toBe(true)
    expect(error).toMatchObject({ code: 'CHILD_GAVE_UP', result: { stopReason: 'tool_fatal' } })
    expect(provider.requests).toHaveLength(1)
  })

  it('retries a provider failure the other copy marks retryable', async () => {
    let calls = 0
    const provider = {
      model: 'm',
      async complete() {
        calls++
        if (calls === 1) throw new b.core.ProviderError('busy', { retryable: true, status: 503 })
        return {
          message: { role: 'assistant' as const, content: 'done' },
          finishReason: 'stop' as const,
          usage: undefined,
          model: 'm',
        }
      },
    }
    const agent = a.core.createAgent({ provider, retry: { baseDelayMs: 1, maxDelayMs: 1 } })
    expect((await agent.run('go')).output).toBe('done')
    expect(calls).toBe(2)
  })
})
