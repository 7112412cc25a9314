import { getEventListeners } from 'node:events'
import { type Agent, createAgent, type RunHandle, type ToolContext, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { SimulatedClock, waitFor } from 'xstate'
import { z } from 'zod'
import { deferred, eventsOf, ManualProvider, recordEvents, runFailure } from './helpers.ts'

type Canceller = (agent: Agent, handle: RunHandle, controller: AbortController) => void
const ways: [string, Canceller][] = [
  ['handle.cancel()', (_agent, handle) => handle.cancel('user pressed stop')],
  ['agent.cancel()', (agent) => agent.cancel('user pressed stop')],
  ['an aborted signal', (_agent, _handle, controller) => controller.abort('user pressed stop')],
]

function blockingTool() {
  const started = deferred<ToolContext>()
  const t = tool({
    name: 'long_job',
    description: 'Runs until aborted.',
    schema: z.object({}),
    execute: (_args, context) => {
      started.resolve(context)
      return new Promise((_resolve, reject) => context.signal.addEventListener('abort', () => reject(context.signal.reason)))
    },
  })
  return { tool: t, started: started.promise }
}

describe.each(ways)('cancelling with %s', (_name, cancel) => {
  it('aborts the running tool through its signal; the run ends cancelled', async () => {
    const { tool: t, started } = blockingTool()
    const provider = new ScriptedProvider({ script: [{ toolCalls: [{ name: 'long_job', arguments: {} }] }] })
    const agent = createAgent({ provider, tools: [t], clock: new SimulatedClock() })
    const events = recordEvents(agent)
    const controller = new AbortController()
    const handle = agent.start('go', { signal: controller.signal })
    const context = await started
    expect(context.signal.aborted).toBe(false)
    cancel(agent, handle, controller)
    expect(context.signal.aborted).toBe(true)
    const error = await runFailure(handle.result)
    expect(error.code).toBe('RUN_CANCELLED')
    expect(error.message).toContain('user pressed stop')
    expect(error.result.status).toBe('cancelled')
    expect(error.result.stopReason).toBe('cancelled')
    expect(eventsOf(events, 'run.end')[0]).toMatchObject({ status: 'cancelled' })
    expect(eventsOf(events, 'tool.end')).toEqual([])
  })

  it('aborts the model call through its signal', async () => {
    const provider = new ManualProvider()
    const agent = createAgent({ provider, clock: new SimulatedClock() })
    const controller = new AbortController()
    const handle = agent.start('go', { signal: controller.signal })
    await provider.called(1)
    expect(provider.signals[0]?.aborted).toBe(false)
    cancel(agent, handle, controller)
    expect(provider.signals[0]?.aborted).toBe(true)
    const error = await runFailure(handle.result)
    expect(error.code).toBe('RUN_CANCELLED')
    expect(error.result.status).toBe('cancelled')
  })
})

describe('cancellation', () => {
  it('aborts a scripted model step that is still delayed', async () => {
    const provider = new ScriptedProvider({ script: [{ content: 'too late', delayMs: 60_000 }] })
    const agent = createAgent({ provider })
    const handle = agent.start('go')
    await waitFor(handle.actor, (s) => s.hasTag('model'))
    handle.cancel()
    const error = await runFailure(handle.result)
    expect(error.code).toBe('RUN_CANCELLED')
    expect(error.result.messages.some((m) => m.content === 'too late')).toBe(false)
  })

  it('a signal aborted before the run starts cancels it at once', async () => {
    const provider = new ScriptedProvider({ script: [] })
    const agent = createAgent({ provider })
    const events = recordEvents(agent)
    const controller = new AbortController()
    controller.abort('never mind')
    const error = await runFailure(agent.run('go', { signal: controller.signal }))
    expect(error.code).toBe('RUN_CANCELLED')
    expect(error.message).toContain('never mind')
    expect(error.result.status).toBe('cancelled')
    expect(provider.requests).toEqual([])
    expect(eventsOf(events, 'run.end')[0]).toMatchObject({ status: 'cancelled' })
  })

  it('agent.cancel() cancels every run in flight, and only those', async () => {
    const provider = new ManualProvider()
    const agent = createAgent({ provider, clock: new SimulatedClock() })
    const a = agent.start('a')
    const b = agent.start('b')
    await provider.called(2)
    expect(agent.runs.size).toBe(2)
    agent.cancel()
    expect((await runFailure(a.result)).result.status).toBe('cancelled')
    expect((await runFailure(b.result)).result.status).toBe('cancelled')
    expect(agent.runs.size).toBe(0)
  })

  it('keeps the transcript so far in the cancelled result', async () => {
    const { tool: t, started } = blockingTool()
    const provider = new ScriptedProvider({
      script: [{ content: 'Starting.', toolCalls: [{ id: 'c1', name: 'long_job', arguments: {} }] }],
    })
    const agent = createAgent({ provider, tools: [t], clock: new SimulatedClock() })
    const handle = agent.start('go')
    await started
    handle.cancel()
    const error = await runFailure(handle.result)
    expect(error.result.messages.map((m) => m.role)).toEqual(['user', 'assistant'])
    expect(error.result.turns).toBe(1)
  })
})

describe("a run's signal over many steps", () => {
  it('holds one abort listener however many waits the run goes through (none left at the end); every hook and tool got a live signal', async () => {
    const controller = new AbortController()
    const counts: number[] = []
    const seen: AbortSignal[] = []
    const count = tool({
      name: 'count',
      description: 'Counts the listeners on the run signal.',
      schema: z.object({}),
      execute: (_args, context) => {
        seen.push(context.signal)
        counts.push(getEventListeners(controller.signal, 'abort').length)
        return 'ok'
      },
    })
    const steps = 40
    const provider = new ScriptedProvider({
      script: [...Array.from({ length: steps }, () => ({ toolCalls: [{ name: 'count', arguments: {} }] })), { content: 'done' }],
    })
    const hooked = (context: { signal: AbortSignal }) => {
      seen.push(context.signal)
    }
    const agent = createAgent({
      provider,
      tools: [count],
      maxTurns: steps + 5,
      hooks: {
        beforeTurn: hooked,
        beforeProviderCall: hooked,
        beforeToolExecution: hooked,
        afterToolExecution: hooked,
        afterTurn: hooked,
      },
    })
    const result = await agent.run('go', { signal: controller.signal })
    expect(result.status).toBe('done')
    expect(counts).toEqual(Array.from({ length: steps }, () => 1))
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    // Each wait had its own signal, none aborted by the wait ending normally.
    expect(seen.length).toBeGreaterThan(steps * 5)
    expect(new Set(seen).size).toBe(seen.length)
    expect(seen.every((signal) => !signal.aborted)).toBe(true)
  })
})

describe('one signal shared by many runs (a server passing its shutdown signal to each)', () => {
  it('thirty runs hold one listener on it, not thirty (no MaxListenersExceededWarning); aborting it cancels them all', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.name)
    process.on('warning', onWarning)
    try {
      const { tool: t } = blockingTool()
      const runs = 30
      const provider = new ScriptedProvider({
        script: Array.from({ length: runs }, () => ({ toolCalls: [{ name: 'long_job', arguments: {} }] })),
      })
      const agent = createAgent({ provider, tools: [t], clock: new SimulatedClock() })
      const controller = new AbortController()
      const handles = Array.from({ length: runs }, (_, i) => agent.start(`go ${i}`, { signal: controller.signal }))
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
      // A run that ends on its own lets go of the signal; the others keep their one listener.
      handles[0]?.cancel('done with this one')
      await runFailure(handles[0]?.result as Promise<unknown>)
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1)
      controller.abort('server shutting down')
      const errors = await Promise.all(handles.slice(1).map((handle) => runFailure(handle.result)))
      expect(errors.map((error) => error.code)).toEqual(Array.from({ length: runs - 1 }, () => 'RUN_CANCELLED'))
      expect(errors.every((error) => error.message.includes('server shutting down'))).toBe(true)
      await new Promise<void>((resolve) => setImmediate(resolve))
      expect(warnings.filter((name) => name === 'MaxListenersExceededWarning')).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })
})
