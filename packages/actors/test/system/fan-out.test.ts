/**
 * fanOut: N tasks, at most `concurrency` in flight, results in the tasks' order, each failure in
 * its own slot; and the same over an agent system (N tasks on one agent definition).
 */

import { fanOut } from '@signalbox/actors/system'
import { describe, expect, it } from 'vitest'
import { agent, TOPOLOGIES, taskOf, topology } from './harness.ts'

describe('fanOut', () => {
  it('keeps at most `concurrency` tasks in flight and returns results in order, errors apart', async () => {
    let running = 0
    let max = 0
    const inputs = Array.from({ length: 12 }, (_, i) => i)
    const results = await fanOut(
      inputs,
      async (n) => {
        running++
        max = Math.max(max, running)
        // Later tasks finish first: order must come from the inputs, not from completion.
        await new Promise((resolve) => setTimeout(resolve, 5 + (12 - n) * 4))
        running--
        if (n % 5 === 4) throw new Error(`task ${n} broke`)
        return n * 10
      },
      { concurrency: 3 },
    )
    expect(max).toBe(3)
    expect(results).toHaveLength(12)
    results.forEach((result, n) => {
      if (n % 5 === 4) expect(result).toMatchObject({ ok: false, error: { message: `task ${n} broke` } })
      else expect(result).toEqual({ ok: true, value: n * 10 })
    })
  })

  it('a cancelled fan-out starts nothing new and marks the rest as cancelled', async () => {
    const controller = new AbortController()
    const started: number[] = []
    const results = await fanOut(
      [0, 1, 2, 3, 4, 5],
      async (n, _i, signal) => {
        started.push(n)
        if (n === 1) controller.abort()
        await new Promise((resolve) => setTimeout(resolve, 10))
        return signal.aborted ? 'late' : 'ok'
      },
      { concurrency: 2, signal: controller.signal },
    )
    expect(started).toEqual([0, 1])
    expect(results.slice(2).every((r) => !r.ok && r.error.code === 'ABORTED')).toBe(true)
  })
})

describe.each(TOPOLOGIES)('fanOut over an agent system (%s)', (name) => {
  it('N tasks on one agent definition: answers in order, one failure kept to its task', async () => {
    const t = await topology(name)
    const translator = agent({
      id: 'translator',
      script: (request) => {
        const word = taskOf(request)
        if (word === 'saudade') return { error: { status: 400, message: 'no translation for saudade' }, delayMs: 5 }
        return { content: word.toUpperCase(), delayMs: 30 - word.length }
      },
    })
    t.child.add(translator.agent)
    await t.start()
    const words = ['tren', 'saudade', 'hotel', 'mar', 'playa']
    const results = await fanOut(words, (word) => t.parent.run('translator', word), { concurrency: 2 })
    expect(results.map((r) => (r.ok ? r.value.output : `error ${r.error.code}`))).toEqual([
      'TREN',
      'error PROVIDER_ERROR',
      'HOTEL',
      'MAR',
      'PLAYA',
    ])
    const failed = results[1]
    expect(!failed?.ok && failed?.error.message).toContain('no translation for saudade')
  })
})
