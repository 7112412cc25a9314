/**
 * Scale: many agents in one process.
 *
 * (a) Memory per waiting agent: N agents (1,000 and 10,000) each parked on an approval (the model
 *     asked for a tool that needs one; the reviewer holds its answer). Retained heap after a full
 *     GC, divided by N. Three shapes: N runs of one agent definition started through an
 *     `AgentSystem` (the usual fan-out), N agent definitions with one run each, and the seed's
 *     bare loop parked the same way (its `beforeToolExecution` hook waits for the approval).
 * (b) Throughput: 1,000 agents running at once, each doing M tool steps against the in-process
 *     scripted model; tool steps per second, through the system and through `agent.run`, next
 *     to the bare loop run the same way.
 */

import { createAgentSystem } from '@signalbox/actors/system'
import { type ApprovalDecision, type ApprovalRequest, createAgent, type Provider, type Reviewer, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { z } from 'zod'
import { type Chat, type Message, responderChat, runBareLoop } from '../lib/bare-loops.ts'
import { fullGc, gc, measureInterleaved, type Variant } from '../lib/measure.ts'
import { buildRows, type Check, type Row, type Table } from '../lib/report.ts'
import { countToolResults, FINAL_ANSWER, modelFor, noopTool, PROMPT, responder } from '../lib/workload.ts'
import type { ScenarioOptions } from './options.ts'

export const WAITING_AGENT_TARGET_KIB = 50
/** What each additional agent definition adds (one machine shared by all agents). */
export const AGENT_DEFINITION_TARGET_KIB = 10

/** Holds every approval until `release()`; says when `count` are waiting. */
function parkingReviewer() {
  const held: (() => void)[] = []
  let expected = 0
  let onParked: (() => void) | undefined
  const reviewer: Reviewer = {
    review: (request: ApprovalRequest) =>
      new Promise<ApprovalDecision>((resolve) => {
        held.push(() =>
          resolve({
            requestId: request.requestId,
            callId: request.callId,
            digest: request.digest,
            approved: true,
            reviewer: 'bench',
            decidedAt: Date.now(),
          }),
        )
        if (held.length === expected) onParked?.()
      }),
  }
  return {
    reviewer,
    /** A bare-loop stand-in: the same wait, as a promise its hook awaits. */
    hold: () =>
      new Promise<void>((resolve) => {
        held.push(resolve)
        if (held.length === expected) onParked?.()
      }),
    parked(count: number): Promise<void> {
      expected = count
      return new Promise((resolve) => {
        onParked = resolve
        if (held.length >= count) resolve()
      })
    },
    release(): void {
      for (const go of held.splice(0)) go()
    },
  }
}

const bookTool = tool({
  name: 'book',
  description: 'Books something. Irreversible: needs a person’s approval.',
  schema: z.object({ item: z.number().int() }),
  needsApproval: true,
  execute: async () => 'booked',
})

/** Asks for `book` once, then answers. */
function approvalModel(): Provider {
  return new ScriptedProvider({
    model: 'scale',
    record: false,
    script: (request) =>
      countToolResults(request.messages) > 0
        ? { content: FINAL_ANSWER }
        : { toolCalls: [{ name: 'book', arguments: { item: 1 } }] },
  })
}

type Parking = ReturnType<typeof parkingReviewer>
interface Shape {
  id: string
  label: string
  /** Builds what one batch needs and returns a starter per agent. */
  prepare(parking: Parking, count: number): (i: number) => Promise<unknown>
}

const SHAPES: Shape[] = [
  {
    id: 'bare',
    label: 'bare loop (hook awaits the approval)',
    prepare: (parking) => {
      const chat: Chat = async (messages: Message[]) =>
        countToolResults(messages) > 0
          ? { message: { role: 'assistant', content: FINAL_ANSWER }, finishReason: 'stop' }
          : {
              message: {
                role: 'assistant',
                content: null,
                tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'noop', arguments: '{"step":0}' } }],
              },
              finishReason: 'tool_calls',
            }
      const hooks = {
        beforeToolExecution: async () => {
          await parking.hold()
          return { authorize: true }
        },
      }
      return () => runBareLoop(chat, PROMPT, hooks)
    },
  },
  {
    id: 'agent-runs',
    label: 'signalbox: N runs of one agent (agent.run)',
    prepare: (parking) => {
      const agent = createAgent({ id: 'booker', provider: approvalModel(), tools: [bookTool], reviewer: parking.reviewer })
      return () => agent.run(PROMPT)
    },
  },
  {
    id: 'system-runs',
    label: 'signalbox: N runs of one agent (system.run)',
    prepare: (parking) => {
      const system = createAgentSystem({ hostId: 'bench' })
      system.add(createAgent({ id: 'booker', provider: approvalModel(), tools: [bookTool], reviewer: parking.reviewer }))
      return () => system.run('booker', PROMPT)
    },
  },
  {
    id: 'system-agents',
    label: 'signalbox: N agents, one run each',
    prepare: (parking, count) => {
      const system = createAgentSystem({ hostId: 'bench' })
      const provider = approvalModel()
      for (let i = 0; i < count; i++)
        system.add(createAgent({ id: `booker-${i}`, provider, tools: [bookTool], reviewer: parking.reviewer }))
      return (i) => system.run(`booker-${i}`, PROMPT)
    },
  },
]

/** Retained heap per waiting agent, in KiB (agents built inside the measurement for `system-agents`). */
async function waitingHeap(shape: Shape, count: number): Promise<{ kib: number; startMs: number; releaseMs: number }> {
  // Warm the code paths once so compiled code and lazily built structures are not counted.
  {
    const parking = parkingReviewer()
    const start = shape.prepare(parking, 1)
    const warm = start(0)
    await parking.parked(1)
    parking.release()
    await warm
  }
  fullGc()
  const before = process.memoryUsage().heapUsed
  const parking = parkingReviewer()
  const t0 = performance.now()
  const start = shape.prepare(parking, count)
  const runs: Promise<unknown>[] = []
  for (let i = 0; i < count; i++) runs.push(start(i))
  await parking.parked(count)
  const startMs = performance.now() - t0
  fullGc()
  const after = process.memoryUsage().heapUsed
  const t1 = performance.now()
  parking.release()
  await Promise.all(runs)
  const releaseMs = performance.now() - t1
  return { kib: (after - before) / count / 1024, startMs, releaseMs }
}

export async function scaleMemoryScenario(counts: number[]): Promise<Table[]> {
  if (!gc) return []
  const tables: Table[] = []
  for (const count of counts) {
    const measured = new Map<string, Awaited<ReturnType<typeof waitingHeap>>>()
    for (const shape of SHAPES) measured.set(shape.id, await waitingHeap(shape, count))
    const base = measured.get('bare')?.kib ?? 1
    const rows: Row[] = SHAPES.map((shape) => {
      const m = measured.get(shape.id)!
      return { id: shape.id, label: shape.label, median: m.kib, spread: 0, values: [m.kib], steps: 1, vsBaseline: m.kib / base }
    })
    const checks: Check[] = ['system-runs', 'system-agents'].map((id) => ({
      name: `heap per waiting agent, ${count.toLocaleString('en-US')} ${id === 'system-runs' ? 'runs of one agent' : 'agents'}`,
      value: measured.get(id)!.kib,
      unit: 'KiB',
      target: `< ${WAITING_AGENT_TARGET_KIB} KiB`,
      pass: measured.get(id)!.kib < WAITING_AGENT_TARGET_KIB,
    }))
    // N definitions with a run each, minus N runs of one definition: what a definition adds.
    const perDefinition = measured.get('system-agents')!.kib - measured.get('system-runs')!.kib
    checks.push({
      name: `heap per additional agent definition (N agents − N runs of one agent), ${count.toLocaleString('en-US')}`,
      value: perDefinition,
      unit: 'KiB',
      target: `≤ ${AGENT_DEFINITION_TARGET_KIB} KiB`,
      pass: perDefinition <= AGENT_DEFINITION_TARGET_KIB,
    })
    const timing = SHAPES.map(
      (s) =>
        `${s.id}: parked in ${Math.round(measured.get(s.id)!.startMs)} ms, released in ${Math.round(measured.get(s.id)!.releaseMs)} ms`,
    ).join('; ')
    tables.push({
      id: `scale-waiting-${count}`,
      title: `(scale) Memory per waiting agent: ${count.toLocaleString('en-US')} agents in one process, each parked on an approval`,
      note: `Retained heap after a full GC, divided by ${count} (one measurement; in-process scripted model). ${timing}.`,
      metric: 'kib-per-run',
      baseline: 'bare',
      rows,
      checks,
      extra: Object.fromEntries(measured),
    })
  }
  return tables
}

export async function scaleThroughputScenario(agents: number, steps: number, options: ScenarioOptions): Promise<Table> {
  const model = modelFor(steps)
  const provider = new ScriptedProvider({ script: responder, model, record: false })
  const agent = createAgent({ id: 'worker', provider, tools: [noopTool], maxTurns: steps + 2 })
  const system = createAgentSystem({ hostId: 'bench' }).add(agent)
  const budgeted = createAgentSystem({ hostId: 'bench-budget', limits: { maxTotalTurns: 1_000_000 } }).add(
    createAgent({ id: 'worker', provider, tools: [noopTool], maxTurns: steps + 2 }),
  )
  const bareChat = responderChat(model, (m, messages) => responder({ model: m, messages } as never, 0) as never)
  const check = (output: string) => {
    if (output !== FINAL_ANSWER) throw new Error(`run ended with ${JSON.stringify(output)}`)
  }
  const batch = (one: () => Promise<number>) => async () => {
    const all: Promise<number>[] = []
    for (let i = 0; i < agents; i++) all.push(one())
    let total = 0
    for (const ran of await Promise.all(all)) total += ran
    return total
  }
  const variants: Variant[] = [
    { id: 'bare', label: 'bare loop', run: batch(() => runBareLoop(bareChat, PROMPT)) },
    {
      id: 'agent-run',
      label: 'signalbox agent.run',
      run: batch(async () => {
        const result = await agent.run(PROMPT)
        check(result.output)
        return countToolResults(result.messages)
      }),
    },
    {
      id: 'system-run',
      label: 'signalbox system.run',
      run: batch(async () => {
        const result = await system.run('worker', PROMPT)
        check(result.output)
        return countToolResults(result.messages)
      }),
    },
    {
      id: 'system-run-budget',
      label: 'signalbox system.run, tree budget on',
      run: batch(async () => {
        const result = await budgeted.run('worker', PROMPT)
        check(result.output)
        return countToolResults(result.messages)
      }),
    },
  ]
  const measured = await measureInterleaved(variants, {
    rounds: options.rounds,
    warmup: options.warmup,
    minSampleMs: 0,
    onSample: options.progress,
  })
  return {
    id: `scale-throughput-${agents}`,
    title: `(scale) Throughput: ${agents.toLocaleString('en-US')} agents running at once, ${steps} tool steps each`,
    note: `Tool steps per second (higher is better), median of ${options.rounds} interleaved rounds; ${agents * steps} tool steps per batch; in-process scripted model. "tree budget on" adds maxTotalTurns accounting (event listeners and a check before every turn).`,
    metric: 'steps-per-second',
    baseline: 'bare',
    rows: buildRows(measured, 'steps-per-second', 'bare', { 'system-run': 'agent-run' }),
    checks: [],
  }
}
