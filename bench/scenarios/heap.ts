/**
 * Heap per parked run: K runs each do a few tool steps, then wait on a model call that does not
 * answer until released. Retained heap after a full GC, divided by K. Needs `gc` (see measure.ts).
 */
import type { Provider, ProviderResponse } from '@signalbox/core'
import { type Chat, type Message, runBareLoop } from '../lib/bare-loops.ts'
import { fullGc, gc } from '../lib/measure.ts'
import { httpParking, type Parking, parkModel } from '../lib/parking.ts'
import type { Row, Table } from '../lib/report.ts'

/** Target: heap per signalbox run parked on a model call over HTTP. */
export const HTTP_PARKED_TARGET_KIB = 45

import { benchAgent, runAgent } from '../lib/signalbox.ts'
import { countToolResults, FINAL_ANSWER, noopHooks, PROMPT } from '../lib/workload.ts'
import { PEER_IDS } from '../peers/index.ts'
import { HTTP_LABELS, httpRunners } from './http.ts'

/** A model that asks for the tool `parkAfter` times, then holds its answer until `release()`. */
export function parkingModel(
  parkAfter: number,
): Parking & { reply(messages: readonly { role: string }[]): Promise<ProviderResponse> } {
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
    async release(): Promise<void> {
      for (const resolve of held.splice(0)) resolve()
    },
  }
}

/** The longest a batch may take to park or to finish: a stuck run fails the bench instead of hanging it. */
const PARK_TIMEOUT_MS = 120_000

/** Retained heap per run (KiB) with `count` runs of `one` parked on `parking`. */
export async function parkedHeap(
  count: number,
  parking: Parking,
  one: () => Promise<number>,
  parkAfter: number,
): Promise<number> {
  const signal = AbortSignal.timeout(PARK_TIMEOUT_MS)
  const checked = async () => {
    const ran = await one()
    if (ran !== parkAfter) throw new Error(`expected ${parkAfter} tool steps, ran ${ran}`)
  }
  // A run that fails (or ends) before it parks fails the batch rather than leaving it waiting.
  const parkedOrFailed = async (runs: Promise<void>[], n: number) => {
    let parked = false
    const ended = Promise.all(runs).then(() => {
      if (!parked) throw new Error('runs finished before they parked')
    })
    try {
      await Promise.race([parking.parked(n, signal), ended])
    } finally {
      parked = true
      // The runs themselves are awaited (and their failures thrown) by the caller.
      ended.catch(() => {})
    }
  }
  // Warm the code paths once so compiled code and lazily built structures are not counted.
  const warm = [checked()]
  await parkedOrFailed(warm, 1)
  await parking.release(signal)
  await Promise.all(warm)
  fullGc()
  const before = process.memoryUsage().heapUsed
  const runs: Promise<void>[] = []
  for (let i = 0; i < count; i++) runs.push(checked())
  await parkedOrFailed(runs, count)
  fullGc()
  const after = process.memoryUsage().heapUsed
  await parking.release(signal)
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
  for (const c of cases) {
    const model = parkingModel(parkAfter)
    kib.set(c.id, await parkedHeap(count, model, c.start(model), parkAfter))
  }
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

/** The same over HTTP: every variant's model call is held by the scripted server (in its own process by default). */
export async function httpHeapScenario(
  url: string,
  count: number,
  parkAfter: number,
  server: string,
): Promise<Table | undefined> {
  if (!gc) return undefined
  const runners = httpRunners({ url, steps: parkAfter, withHooks: false, model: parkModel(parkAfter) })
  const ids = ['fetch', 'openai', 'signalbox', ...PEER_IDS] as const
  const parking = httpParking(url)
  const kib = new Map<string, number>()
  for (const id of ids) kib.set(id, await parkedHeap(count, parking, runners[id], parkAfter))
  const base = kib.get('fetch')!
  const rows: Row[] = ids.map((id) => ({
    id,
    label: HTTP_LABELS[id],
    median: kib.get(id)!,
    spread: 0,
    values: [kib.get(id)!],
    steps: parkAfter,
    vsBaseline: kib.get(id)! / base,
  }))
  return {
    id: 'heap-parked-http',
    title: `Heap per parked run over HTTP (${count} runs in flight, each parked on its model call after ${parkAfter} tool steps)`,
    note: `Retained heap of this process after a full GC, divided by the number of runs (one measurement; streaming off; model server: ${server}${server === 'in-process' ? ', so its held requests count too' : ''}).`,
    metric: 'kib-per-run',
    baseline: 'fetch',
    rows,
    checks: [
      {
        name: 'heap per signalbox run parked on a model call over HTTP',
        value: kib.get('signalbox')!,
        unit: 'KiB',
        target: `≤ ${HTTP_PARKED_TARGET_KIB} KiB`,
        pass: kib.get('signalbox')! <= HTTP_PARKED_TARGET_KIB,
      },
    ],
  }
}
