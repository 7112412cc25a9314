/**
 * Where the in-process time goes. The same workload as a minimal XState machine (one state per
 * wait, each wait an invoked promise actor, one assign per reply), then the same machine with
 * each of signalbox's per-step ingredients added on its own: pass-through (eventless) states,
 * extra assign actions, extra invoked actors. Together with the counts of those ingredients in one
 * signalbox tool step (read with XState's inspection API), this splits signalbox's cost per step.
 *
 * xstate is not a dependency of the bench: it is loaded from @signalbox/core's own resolution,
 * so this is the very copy the agent machine runs on.
 */
import { createRequire } from 'node:module'
import { createAgent } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { type Chat, type Message, responderChat, runBareLoop } from '../lib/bare-loops.ts'
import { cpuNsPerStep, measureInterleaved, median, type Variant } from '../lib/measure.ts'
import { buildRows, type Table } from '../lib/report.ts'
import { benchAgent, runAgent } from '../lib/signalbox.ts'
import { countToolResults, modelFor, nextStep, noopHooks, noopTool, PROMPT, responder } from '../lib/workload.ts'
import { inProcessVariants } from './in-process.ts'
import type { ScenarioOptions } from './options.ts'

// Loosely typed: only what is used below.
type AnyFn = (...args: any[]) => any
interface XState {
  setup(config: Record<string, unknown>): { createMachine(config: Record<string, unknown>): unknown }
  createActor(
    machine: unknown,
    options?: Record<string, unknown>,
  ): { subscribe(o: Record<string, AnyFn>): unknown; start(): void }
  fromPromise(fn: AnyFn): unknown
  fromCallback(fn: AnyFn): unknown
  assign(fn: AnyFn): unknown
  sendTo(to: string, event: unknown): unknown
}
const xstate = createRequire(import.meta.resolve('@signalbox/core'))('xstate') as XState

interface Shape {
  /** Pass-through states after each tool result (each one microstep). */
  hops: number
  /** Extra assign actions on the tool's done transition (each one context copy and snapshot). */
  assigns: number
  /** Extra invoked no-op promise actors per step (each one actor lifecycle and macrostep). */
  invokes: number
  /** Extra context fields (signalbox's context has 26), copied by every assign. */
  fields: number
  /** Compound states around the loop's states (signalbox's tool states sit 4 levels down). */
  depth: number
}

/** The loop as a minimal XState machine, with optional extra per-step ingredients. */
function floorMachine(steps: number, shape: Shape) {
  const { setup, fromPromise, assign } = xstate
  const model = modelFor(steps)
  const chat = responderChat(model, nextStep)
  const extra: Record<string, unknown> = {}
  const after: string[] = []
  for (let i = 0; i < shape.invokes; i++) after.push(`invoke${i}`)
  for (let i = 0; i < shape.hops; i++) after.push(`hop${i}`)
  after.forEach((name, i) => {
    const next = after[i + 1] ?? 'callingModel'
    extra[name] = name.startsWith('hop')
      ? { always: [{ guard: () => false, target: '#floor.done' }, { target: next }] }
      : { invoke: { src: 'noop', onDone: { target: next } } }
  })
  const bumps = Array.from({ length: shape.assigns }, (_, i) => assign(() => ({ [`field${i}`]: i })))
  const wide = Object.fromEntries(Array.from({ length: shape.fields }, (_, i) => [`extra${i}`, i]))
  const machineSetup = setup({
    actors: {
      callModel: fromPromise(({ input }: { input: Message[] }) => chat(input)),
      runTool: fromPromise(({ input }: { input: { arguments: string } }) =>
        noopTool.execute(JSON.parse(input.arguments) as { step: number }, undefined as never),
      ),
      noop: fromPromise(async () => undefined),
    },
  })
  const loop: Record<string, unknown> = {
    initial: 'callingModel',
    states: {
      callingModel: {
        invoke: {
          src: 'callModel',
          input: ({ context }: { context: { messages: Message[] } }) => context.messages,
          onDone: [
            {
              guard: ({ event }: { event: { output: { finishReason: string } } }) => event.output.finishReason !== 'tool_calls',
              target: '#floor.done',
            },
            {
              target: 'runningTool',
              actions: assign(
                ({ context, event }: { context: { messages: Message[] }; event: { output: { message: Message } } }) => ({
                  messages: [...context.messages, event.output.message],
                }),
              ),
            },
          ],
        },
      },
      runningTool: {
        invoke: {
          src: 'runTool',
          input: ({ context }: { context: { messages: Message[] } }) => {
            const last = context.messages[context.messages.length - 1] as Extract<Message, { role: 'assistant' }>
            return last.tool_calls![0]!.function
          },
          onDone: {
            target: after[0] ?? 'callingModel',
            actions: [
              assign(({ context, event }: { context: { messages: Message[] }; event: { output: string } }) => {
                const last = context.messages[context.messages.length - 1] as Extract<Message, { role: 'assistant' }>
                return {
                  messages: [...context.messages, { role: 'tool', tool_call_id: last.tool_calls![0]!.id, content: event.output }],
                }
              }),
              ...bumps,
            ],
          },
        },
      },
      ...extra,
    },
  }
  let root = loop
  for (let i = 0; i < shape.depth; i++) root = { initial: 'inner', states: { inner: root } }
  return machineSetup.createMachine({
    id: 'floor',
    context: () => ({ ...wide, messages: [{ role: 'user', content: PROMPT }] as Message[] }),
    initial: 'running',
    states: { running: root, done: { type: 'final' } },
    output: ({ context }: { context: { messages: Message[] } }) => countToolResults(context.messages),
  })
}

interface WorkerShape {
  /** Wait states per tool step besides the model's and the tool's (hook points, each a wait). */
  hookWaits: number
  /** Compound states around the loop's states (signalbox's waits sit 3 levels down: running.turn.*). */
  depth: number
  /** Extra context fields (signalbox's context has 17 keys), copied by every assign. */
  fields: number
}

/**
 * The same states, but no actor per wait: one long-lived callback actor per run does the model
 * and tool calls on request (`sendTo`) and answers with events. With `shape`, the chart takes
 * signalbox's structure: each hook point a wait state of its own (entered, its work started, its
 * answer an event: what makes a hook visible live), nested as deep, with as wide a context. What
 * signalbox costs beyond this shaped floor is its own code.
 */
function workerMachine(
  steps: number,
  shape: WorkerShape = { hookWaits: 0, depth: 0, fields: 0 },
  chat: Chat = responderChat(modelFor(steps), nextStep),
) {
  const { setup, fromCallback, assign, sendTo } = xstate
  type Ctx = { context: { messages: Message[] } }
  const lastCall = (messages: Message[]) =>
    (messages[messages.length - 1] as Extract<Message, { role: 'assistant' }>).tool_calls![0]!
  const worker = fromCallback(({ sendBack, receive }: { sendBack: AnyFn; receive: AnyFn }) => {
    receive((event: { type: string; messages: Message[] }) => {
      if (event.type === 'model.call') {
        chat(event.messages).then(
          (output) => sendBack({ type: 'model.done', output }),
          (error) => sendBack({ type: 'failed', error }),
        )
      } else if (event.type === 'hook.call') {
        // A no-op hook: answers on the next microtask, as an async hook does.
        Promise.resolve(undefined).then(
          (output) => sendBack({ type: 'hook.done', output }),
          (error) => sendBack({ type: 'failed', error }),
        )
      } else {
        const call = lastCall(event.messages)
        Promise.resolve(noopTool.execute(JSON.parse(call.function.arguments) as { step: number }, undefined as never)).then(
          (output) => sendBack({ type: 'tool.done', output }),
          (error) => sendBack({ type: 'failed', error }),
        )
      }
    })
  })
  // The hook waits, split as signalbox's are: before the model (beforeTurn, beforeProviderCall),
  // before the tool (beforeToolExecution), after it (afterToolExecution, afterTurn).
  const hooks = Array.from({ length: shape.hookWaits }, (_, i) => `hook${i}`)
  const beforeModel = hooks.slice(0, Math.min(2, hooks.length))
  const beforeTool = hooks.slice(2, 3)
  const afterTool = hooks.slice(3)
  const chain = (names: string[], then: string) =>
    Object.fromEntries(
      names.map((name, i) => [
        name,
        {
          entry: sendTo('worker', ({ context }: Ctx) => ({ type: 'hook.call', messages: context.messages })),
          on: { 'hook.done': { target: names[i + 1] ?? then } },
        },
      ]),
    )
  const loop: Record<string, unknown> = {
    initial: beforeModel[0] ?? 'callingModel',
    states: {
      ...chain(beforeModel, 'callingModel'),
      callingModel: {
        entry: sendTo('worker', ({ context }: Ctx) => ({ type: 'model.call', messages: context.messages })),
        on: {
          'model.done': [
            {
              guard: ({ event }: { event: { output: { finishReason: string } } }) => event.output.finishReason !== 'tool_calls',
              target: '#worker-floor.done',
            },
            {
              target: beforeTool[0] ?? 'runningTool',
              actions: assign(({ context, event }: Ctx & { event: { output: { message: Message } } }) => ({
                messages: [...context.messages, event.output.message],
              })),
            },
          ],
        },
      },
      ...chain(beforeTool, 'runningTool'),
      runningTool: {
        entry: sendTo('worker', ({ context }: Ctx) => ({ type: 'tool.call', messages: context.messages })),
        on: {
          'tool.done': {
            target: afterTool[0] ?? beforeModel[0] ?? 'callingModel',
            actions: assign(({ context, event }: Ctx & { event: { output: string } }) => ({
              messages: [
                ...context.messages,
                { role: 'tool', tool_call_id: lastCall(context.messages).id, content: event.output },
              ],
            })),
          },
        },
      },
      ...chain(afterTool, beforeModel[0] ?? 'callingModel'),
    },
  }
  let root = loop
  for (let i = 0; i < shape.depth; i++) root = { initial: 'inner', states: { inner: root } }
  const wide = Object.fromEntries(Array.from({ length: shape.fields }, (_, i) => [`extra${i}`, i]))
  return setup({ actors: { worker } }).createMachine({
    id: 'worker-floor',
    context: () => ({ ...wide, messages: [{ role: 'user', content: PROMPT }] as Message[] }),
    invoke: { src: 'worker', id: 'worker' },
    initial: 'running',
    states: { running: root, done: { type: 'final' } },
    output: ({ context }: Ctx) => countToolResults(context.messages),
  })
}

/** signalbox's nesting and context width (its tool states sit under running.turn.toolCalls, 17 keys). */
const SIGNALBOX_SHAPE = { depth: 2, fields: 16 }

/**
 * One run of the design's floor (the worker loop shaped like signalbox's chart, without signalbox)
 * on a given model call: over HTTP, what any runtime built on this chart pays beside the SDK loop.
 */
export function designFloorRun(chat: Chat, steps: number, hookWaits = 0): () => Promise<number> {
  const machine = workerMachine(steps, { hookWaits, ...SIGNALBOX_SHAPE }, chat)
  return () => runMachine(machine)
}

/**
 * The design's floor in process, on the bench's direct responder: `floor` (signalbox's chart shape,
 * no signalbox code) and `floor-hooks` (each of the five hook points a wait state). Counted beside
 * signalbox's in-process variants, `floor-hooks − floor` is what five visible hook waits cost XState
 * itself (`bench/instructions.ts --in-process`).
 */
export function inProcessFloorVariants(steps: number): Variant[] {
  const plain = workerMachine(steps, { hookWaits: 0, ...SIGNALBOX_SHAPE })
  const hooked = workerMachine(steps, { hookWaits: 5, ...SIGNALBOX_SHAPE })
  return [
    { id: 'floor', label: "the design's floor (signalbox's chart in plain XState)", run: () => runMachine(plain) },
    { id: 'floor-hooks', label: "the design's floor + 5 hook points, each a wait state", run: () => runMachine(hooked) },
  ]
}

/** Every variant a tool can run in process by name: the in-process scenario's, then the floor's. */
export function inProcessAndFloorVariants(steps: number, options: { observed?: boolean } = {}): Variant[] {
  return [...inProcessVariants(steps, options), ...inProcessFloorVariants(steps)]
}

function runMachine(machine: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const actor = xstate.createActor(machine)
    actor.subscribe({
      complete: () => resolve((actor as unknown as { getSnapshot(): { output: number } }).getSnapshot().output),
      error: reject,
    })
    actor.start()
  })
}

/** XState's own counts for one signalbox tool step: actors created, microsteps, actions, snapshots. */
export async function countPerStep(steps: number, withHooks: boolean): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  const provider = new ScriptedProvider({ script: responder, model: modelFor(steps), record: false })
  const agent = createAgent({
    provider,
    tools: [noopTool],
    maxTurns: 1000,
    ...(withHooks ? { hooks: noopHooks } : {}),
    inspect: (event: { type: string }) => {
      const key = event.type.replace('@xstate.', '')
      counts[key] = (counts[key] ?? 0) + 1
    },
  })
  await agent.run(PROMPT)
  return Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, v / steps]))
}

export async function xstateFloorScenario(steps: number, options: ScenarioOptions): Promise<Table> {
  const provider = new ScriptedProvider({ script: responder, model: modelFor(steps), record: false })
  const agent = benchAgent(provider, false)
  const hookedAgent = benchAgent(provider, true)
  const direct = responderChat(modelFor(steps), nextStep)
  const shapes: { id: string; label: string; shape: Shape }[] = [
    {
      id: 'xstate',
      label: 'minimal XState loop (2 invokes, 2 assigns)',
      shape: { hops: 0, assigns: 0, invokes: 0, fields: 0, depth: 0 },
    },
    {
      id: 'xstate-hops',
      label: 'minimal + 10 pass-through states',
      shape: { hops: 10, assigns: 0, invokes: 0, fields: 0, depth: 0 },
    },
    {
      id: 'xstate-assigns',
      label: 'minimal + 4 extra assign actions',
      shape: { hops: 0, assigns: 4, invokes: 0, fields: 0, depth: 0 },
    },
    {
      id: 'xstate-invokes',
      label: 'minimal + 5 invoked no-op actors',
      shape: { hops: 0, assigns: 0, invokes: 5, fields: 0, depth: 0 },
    },
    {
      id: 'xstate-wide',
      label: 'minimal + 25 more context fields',
      shape: { hops: 0, assigns: 0, invokes: 0, fields: 25, depth: 0 },
    },
    {
      id: 'xstate-deep',
      label: 'minimal, nested 4 states deeper',
      shape: { hops: 0, assigns: 0, invokes: 0, fields: 0, depth: 4 },
    },
  ]
  const worker = workerMachine(steps)
  const workerShaped = workerMachine(steps, { hookWaits: 0, ...SIGNALBOX_SHAPE })
  const workerShapedHooks = workerMachine(steps, { hookWaits: 5, ...SIGNALBOX_SHAPE })
  const variants: Variant[] = [
    { id: 'bare', label: 'bare loop, responder called directly', run: () => runBareLoop(direct, PROMPT) },
    ...shapes.map(({ id, label, shape }) => {
      const machine = floorMachine(steps, shape)
      return { id, label, run: () => runMachine(machine) }
    }),
    { id: 'xstate-worker', label: 'XState loop, 1 worker actor per run', run: () => runMachine(worker) },
    {
      id: 'xstate-worker-shaped',
      label: "same, signalbox's nesting and context width",
      run: () => runMachine(workerShaped),
    },
    {
      id: 'xstate-worker-shaped-hooks',
      label: 'same + 5 hook points, each a wait state',
      run: () => runMachine(workerShapedHooks),
    },
    { id: 'signalbox', label: 'signalbox', run: () => runAgent(agent) },
    { id: 'signalbox-hooks', label: 'signalbox + 5 no-op hooks', run: () => runAgent(hookedAgent) },
  ]
  const measured = await measureInterleaved(variants, {
    rounds: options.rounds,
    warmup: options.warmup,
    warmupMs: options.warmupMs ?? 0,
    minSampleMs: options.quick ? 20 : 60,
    onSample: options.progress,
  })
  const rows = buildRows(measured, 'us-per-step', 'bare', {
    'xstate-hops': 'xstate',
    'xstate-assigns': 'xstate',
    'xstate-invokes': 'xstate',
    'xstate-wide': 'xstate',
    'xstate-deep': 'xstate',
    'xstate-worker': 'xstate',
    'xstate-worker-shaped': 'xstate',
    'xstate-worker-shaped-hooks': 'xstate',
    signalbox: 'xstate',
    'signalbox-hooks': 'xstate',
  })
  // Unit costs from CPU time: on a shared machine it moves far less than wall time.
  const cost = (id: string) => median(cpuNsPerStep(measured.find((m) => m.variant.id === id)!)) / 1000
  const unit = {
    hop: (cost('xstate-hops') - cost('xstate')) / 10,
    assign: (cost('xstate-assigns') - cost('xstate')) / 4,
    invoke: (cost('xstate-invokes') - cost('xstate')) / 5,
    wideContext: cost('xstate-wide') - cost('xstate'),
    depth: cost('xstate-deep') - cost('xstate'),
  }
  const plain = await countPerStep(steps, false)
  const hooked = await countPerStep(steps, true)
  const fmt = (n: number | undefined) => (n ?? 0).toFixed(1)
  // The shaped worker floor: signalbox's chart design (one worker per run, every wait a state,
  // its nesting and context width) with no signalbox code. What signalbox costs beyond it is its own.
  const floor = cost('xstate-worker-shaped')
  const floorHooks = cost('xstate-worker-shaped-hooks')
  const model = {
    signalbox: { floor, measured: cost('signalbox'), own: cost('signalbox') - floor },
    hooks: {
      floor: floorHooks - floor,
      measured: cost('signalbox-hooks') - cost('signalbox'),
      own: cost('signalbox-hooks') - cost('signalbox') - (floorHooks - floor),
    },
  }
  return {
    id: `xstate-floor-${steps}`,
    title: `Where the time goes: XState's floor and unit costs (runs of ${steps} tool steps, in-process)`,
    note: [
      `Unit costs (CPU µs per step, from the rows below): one pass-through state ≈ ${unit.hop.toFixed(1)}, one extra assign ≈ ${unit.assign.toFixed(1)}, one extra invoked actor ≈ ${unit.invoke.toFixed(1)}; a 26-field context ≈ +${unit.wideContext.toFixed(1)}; 4 more levels of nesting ≈ +${unit.depth.toFixed(1)}.`,
      `Per signalbox tool step (XState inspection): ${fmt(plain.actor)} actors created, ${fmt(plain.microstep)} microsteps, ${fmt(plain.action)} actions, ${fmt(plain.event)} events; with 5 hooks: ${fmt(hooked.actor)} actors, ${fmt(hooked.microstep)} microsteps, ${fmt(hooked.action)} actions, ${fmt(hooked.event)} events.`,
      `Floor of the design (CPU µs per step): the worker loop shaped like signalbox's chart costs ${floor.toFixed(0)}; signalbox ${model.signalbox.measured.toFixed(0)}, so its own code is ${model.signalbox.own.toFixed(0)}. Five hook points, each a wait state, cost the floor ${model.hooks.floor.toFixed(0)} and signalbox ${model.hooks.measured.toFixed(0)}: ${model.hooks.own.toFixed(0)} of its own (the hook chain, the hooks' contexts, what the machine does with each answer).`,
      '"like-for-like" is each row over the minimal XState loop. The worker rows keep the same states but make no actor per wait: one callback actor per run does the calls and answers with events, as signalbox\'s worker does; the shaped rows nest the waits as deep as signalbox\'s tool states with a 17-key context, and the last makes each hook point a wait state of its own.',
    ].join('\n'),
    metric: 'us-per-step',
    baseline: 'bare',
    rows,
    checks: [],
    extra: { unitCostsUs: unit, perStep: { signalbox: plain, signalboxHooks: hooked }, model },
  }
}
