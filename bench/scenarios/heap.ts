/**
 * Heap per parked run: K runs each do a few tool steps, then wait on a model call that does not
 * answer until released. Retained heap after a full GC, divided by K. Needs `gc` (see measure.ts).
 */
import type { Provider, ProviderResponse } from '@signalbox/core'
import { type Chat, type Message, runBareLoop } from '../lib/bare-loops.ts'
import { fullGc, gc } from '../lib/measure.ts'
import type { Row, Table } from '../lib/report.ts'
import { benchAgent, runAgent } from '../lib/signalbox.ts'
import { countToolResults, FINAL_ANSWER, noopHooks, PROMPT } from '../lib/workload.ts'

/** A model that asks for the tool `parkAfter` times, then holds its answer until `release()`. */
function parkingModel(parkAfter: number) {
  const held: (() => void)[] = []
  let ids = 0
  let onParked: (() => void) | undefined
  let expected = 0
  const reply = async (messages: readonly { role: string }[]): Promise<ProviderResponse> => {
    const done = countToolResults(messages)
    if (done < parkAfter) {
      const message = {
        role: 'assistant' as const,
        content: null,
        tool_calls: [
          { id: `call_${++ids}`, type: 'function' as const, function: { name: 'noop', arguments: `{"step":${done}}` } },
        ],
      }
      return { message, finishReason: 'tool_calls', usage: undefined, model: 'parking' }
    }
    await new Promise<void>((resolve) => {
      held.push(resolve)
      if (held.length === expected) onParked?.()
    })
    return { message: { role: 'assistant', content: FINAL_ANSWER }, finishReason: 'stop', usage: undefined, model: 'parking' }
  }
  return {
    reply,
    /** Resolves once `count` runs are waiting on the model. */
    parked(count: number): Promise<void> {
      expected = count
      return new Promise((resolve) => {
        onParked = resolve
        if (held.length >= count) resolve()
      })
    },
    release(): void {
      for (const resolve of held.splice(0)) resolve()
    },
  }
}

async function parkedHeap(
  count: number,
  parkAfter: number,
  start: (model: ReturnType<typeof parkingModel>) => () => Promise<number>,
) {
  const model = parkingModel(parkAfter)
  const one = start(model)
  // Warm the code paths once so compiled code and lazily built structures are not counted.
  const warm = one()
  await model.parked(1)
  model.release()
  await warm
  fullGc()
  const before = process.memoryUsage().heapUsed
  const runs: Promise<number>[] = []
  for (let i = 0; i < count; i++) runs.push(one())
  await model.parked(count)
  fullGc()
  const after = process.memoryUsage().heapUsed
  model.release()
  await Promise.all(runs)
  return (after - before) / count / 1024
}

export async function heapScenario(count: number, parkAfter: number): Promise<Table | undefined> {
  if (!gc) return undefined
  const bareChat =
    (model: ReturnType<typeof parkingModel>): Chat =>
    async (messages) => {
      const response = await model.reply(messages)
      return { message: response.message as Message, finishReason: response.finishReason }
    }
  const provider = (model: ReturnType<typeof parkingModel>): Provider => ({
    model: 'parking',
    complete: (request) => model.reply(request.messages),
  })
  const cases: { id: string; label: string; start: (model: ReturnType<typeof parkingModel>) => () => Promise<number> }[] = [
    { id: 'bare', label: 'bare loop', start: (m) => () => runBareLoop(bareChat(m), PROMPT) },
    { id: 'bare-hooks', label: 'bare loop + 5 no-op hooks', start: (m) => () => runBareLoop(bareChat(m), PROMPT, noopHooks) },
    {
      id: 'signalbox',
      label: 'signalbox',
      start: (m) => {
        const agent = benchAgent(provider(m), false)
        return () => runAgent(agent)
      },
    },
    {
      id: 'signalbox-hooks',
      label: 'signalbox + 5 no-op hooks',
      start: (m) => {
        const agent = benchAgent(provider(m), true)
        return () => runAgent(agent)
      },
    },
  ]
  const kib = new Map<string, number>()
  for (const c of cases) kib.set(c.id, await parkedHeap(count, parkAfter, c.start))
  const base = kib.get('bare')!
  const rows: Row[] = cases.map((c) => ({
    id: c.id,
    label: c.label,
    median: kib.get(c.id)!,
    spread: 0,
    values: [kib.get(c.id)!],
    steps: parkAfter,
    vsBaseline: kib.get(c.id)! / base,
  }))
  return {
    id: 'heap-parked',
    title: `Heap per parked run (${count} runs in flight, each parked on its model call after ${parkAfter} tool steps)`,
    note: 'Retained heap after a full GC, divided by the number of runs (one measurement; in-process model).',
    metric: 'kib-per-run',
    baseline: 'bare',
    rows,
    checks: [],
  }
}
