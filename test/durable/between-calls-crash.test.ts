/**
 * A durable run killed (SIGKILL) between two model calls, resumed by a new process: the model
 * call in flight is made again (it has no side effect), the tools ran once each, and the run ends
 * with the same transcript as a run that was never interrupted.
 */
import { FileRunStore } from '@signalbox/core/store'
import {
  type RecordedRequest,
  type ScriptedModelServer,
  type ScriptStep,
  startScriptedModelServer,
} from '@signalbox/core/testing'
import { afterEach, describe, expect, it } from 'vitest'
import { type DurableDir, durableDir, startDurableChild } from './support.ts'

/** Answers from the transcript alone, so a repeated call gets the same answer. `hold` delays the second call. */
function twoSteps(hold: { once: boolean }) {
  return (request: RecordedRequest): ScriptStep => {
    const results = request.messages.filter((m) => m.role === 'tool').length
    if (results === 0) return { toolCalls: [{ id: 'call_a', name: 'write_line', arguments: { text: 'a' } }] }
    if (results === 1) {
      const step: ScriptStep = { toolCalls: [{ id: 'call_b', name: 'write_line', arguments: { text: 'b' } }] }
      if (!hold.once) return step
      hold.once = false
      return { ...step, delayMs: 120_000 } // the process is killed while it waits for this
    }
    return { content: 'Wrote a and b.' }
  }
}

describe('durable runs: killed between two model calls', { timeout: 120_000 }, () => {
  const dirs: DurableDir[] = []
  let server: ScriptedModelServer | undefined
  afterEach(async () => {
    await server?.close()
    for (const dir of dirs.splice(0)) await dir.remove()
  })

  it('finishes with the same transcript as a run without the crash; each tool ran once', async () => {
    server = await startScriptedModelServer({ scripts: { steady: twoSteps({ once: false }), crashy: twoSteps({ once: true }) } })
    const steadyDir = await durableDir()
    const crashDir = await durableDir()
    dirs.push(steadyDir, crashDir)

    const steady = await startDurableChild(steadyDir, {
      modelUrl: server.url,
      model: 'steady',
      mode: 'start',
      runIds: ['run-d'],
      reviewer: 'never',
    })
    const expected = await steady.next('result')
    expect(expected.status).toBe('done')

    const first = await startDurableChild(crashDir, {
      modelUrl: server.url,
      model: 'crashy',
      mode: 'start',
      runIds: ['run-d'],
      reviewer: 'never',
    })
    // The second model call is in flight, and the first step (reply + tool result) is stored.
    const store = new FileRunStore({ directory: crashDir.storeDir })
    const signal = new AbortController().signal
    for (;;) {
      const stored = server.requestsFor('crashy').length >= 2 ? await store.load('run-d', { signal }) : undefined
      if (stored && stored.checkpoint.transcript.length === 3) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    await first.child.kill()
    expect(crashDir.effectLines()).toEqual(['write_line a'])

    const second = await startDurableChild(crashDir, {
      modelUrl: server.url,
      model: 'crashy',
      mode: 'resume',
      runIds: ['run-d'],
      reviewer: 'never',
    })
    const resumed = await second.next('result')
    expect(resumed.status).toBe('done')
    expect(resumed.messages).toEqual(expected.messages)
    expect(crashDir.effectLines()).toEqual(['write_line a', 'write_line b'])
    expect(steadyDir.effectLines()).toEqual(['write_line a', 'write_line b'])
    // The call cut off by the crash was made again: 3 calls without the crash, 4 with it.
    expect(server.requestsFor('steady')).toHaveLength(3)
    expect(server.requestsFor('crashy')).toHaveLength(4)
    expect(server.failures).toEqual([])
  })
})
