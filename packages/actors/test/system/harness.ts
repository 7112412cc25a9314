/**
 * Shared harness of the agent-system scenarios. Each scenario is written once against a
 * `Topology` and runs on each of:
 *
 *   one-process      one `AgentSystem`, no bus: every agent is local (XState actors in one process)
 *   in-process-bus   two systems on one in-process bus: the children live on a "host" system and
 *                    are reached through the remote-run protocol (run.request, heartbeats, result)
 *   nats             the same two systems, each on its own connection to the real NATS server
 *
 * The parent's code is the same everywhere: only where the child lives changes. Cross-process
 * cases (a host in another process, kill -9) are in `test/system/`.
 */

import {
  type AgentSystem,
  createAgentSystem,
  type DelegateOptions,
  delegateTool,
  type TreeLimits,
} from '@signalbox/actors/system'
import type { Signer, TrustPolicy } from '@signalbox/actors/trust'
import {
  type Agent,
  type AgentEvent,
  createAgent,
  type Hooks,
  type Message,
  type Reviewer,
  type Tool,
  type ToolContext,
  tool,
} from '@signalbox/core'
import type { Bus, Subjects } from '@signalbox/core/bus'
import { type RecordedRequest, type Script, ScriptedProvider, type ScriptStep } from '@signalbox/core/testing'
import { z } from 'zod'
import { type Deferred, type Deployment, deferred, deploy, inProcess, nats } from '../actors/harness.ts'

export { deferred, eventually, recordEvents, sleep, within } from '../actors/harness.ts'

export type TopologyName = 'one-process' | 'in-process-bus' | 'nats'
export const TOPOLOGIES: TopologyName[] = ['one-process', 'in-process-bus', 'nats']
export const REMOTE_TOPOLOGIES: TopologyName[] = ['in-process-bus', 'nats']

export interface Topology {
  name: TopologyName
  /** Children are reached over a bus (another system, another connection). */
  remote: boolean
  /** Where the root runs. */
  parent: AgentSystem
  /** Where the children live (the same system in one process). */
  child: AgentSystem
  /** The parent's bus (undefined in one process). */
  bus: Bus | undefined
  /** The children's host bus (undefined in one process). */
  childBus: Bus | undefined
  subjects: Subjects
  deployment: Deployment | undefined
  /** Serves the children's system on the bus (no-op in one process). Call after adding agents. */
  start(): Promise<void>
}

export interface TopologyOptions {
  /** Limits of both systems (unless `childLimits` is given). */
  limits?: TreeLimits
  childLimits?: TreeLimits
  leaseMs?: number
  /** The parent system's key (its cancels of remote children are signed with it). */
  parentSigner?: Signer
  /** The child system's trust policy (who may cancel and steer its agents). */
  childTrust?: TrustPolicy
}

export async function topology(name: TopologyName, options: TopologyOptions = {}): Promise<Topology> {
  const leaseMs = options.leaseMs ?? 5_000
  if (name === 'one-process') {
    const system = createAgentSystem({ hostId: 'solo', ...(options.limits ? { limits: options.limits } : {}), leaseMs })
    return {
      name,
      remote: false,
      parent: system,
      child: system,
      bus: undefined,
      childBus: undefined,
      subjects: system.subjects,
      deployment: undefined,
      start: async () => {},
    }
  }
  const deployment = await deploy(name === 'nats' ? nats : inProcess)
  const bus = await deployment.bus('parent')
  const childBus = await deployment.bus('child-host')
  const { subjects } = deployment
  const parent = createAgentSystem({
    bus,
    subjects,
    hostId: 'parent-host',
    ...(options.limits ? { limits: options.limits } : {}),
    ...(options.parentSigner ? { signer: options.parentSigner } : {}),
    leaseMs,
  })
  const childLimits = options.childLimits ?? options.limits
  const child = createAgentSystem({
    bus: childBus,
    subjects,
    hostId: 'child-host',
    ...(childLimits ? { limits: childLimits } : {}),
    ...(options.childTrust ? { trust: options.childTrust } : {}),
    leaseMs,
  })
  deployment.defer(() => parent.close())
  deployment.defer(() => child.close())
  return {
    name,
    remote: true,
    parent,
    child,
    bus,
    childBus,
    subjects,
    deployment,
    start: () => child.serve(),
  }
}

// ---- scripted models ----

/** A provider playing `script`; fails loudly on anything unplanned. */
export function scripted(script: Script, model = 'scripted'): ScriptedProvider {
  return new ScriptedProvider({ script, model })
}

export const call = (name: string, args: Record<string, unknown>, extra: Partial<ScriptStep> = {}): ScriptStep =>
  ({ toolCalls: [{ name, arguments: args }], ...extra }) as ScriptStep
export const answer = (content: string, extra: Partial<ScriptStep> = {}): ScriptStep => ({ content, ...extra }) as ScriptStep

export const lastMessage = (request: RecordedRequest): Message | undefined => request.messages.at(-1)

/** The last message is a tool result containing `text`. */
export const afterToolResult =
  (text: string) =>
  (request: RecordedRequest): true | string => {
    const last = lastMessage(request)
    return last?.role === 'tool' && last.content.includes(text)
      ? true
      : `expected a tool result with ${JSON.stringify(text)}, got ${JSON.stringify(last)}`
  }

/** The user's task, as the child received it. */
export const taskOf = (request: RecordedRequest): string => {
  const user = request.messages.find((m) => m.role === 'user')
  return typeof user?.content === 'string' ? user.content : ''
}

// ---- agents and tools ----

export function agent(options: {
  id: string
  script: Script | ScriptedProvider
  tools?: Tool<any>[]
  hooks?: Hooks | Hooks[]
  reviewer?: Reviewer
  instructions?: string
  maxTurns?: number
  approvalTimeoutMs?: number
}): { agent: Agent; provider: ScriptedProvider; events: AgentEvent[] } {
  const provider = options.script instanceof ScriptedProvider ? options.script : scripted(options.script, options.id)
  const created = createAgent({
    id: options.id,
    provider,
    tools: options.tools ?? [],
    ...(options.hooks ? { hooks: options.hooks } : {}),
    ...(options.reviewer ? { reviewer: options.reviewer } : {}),
    ...(options.instructions ? { instructions: options.instructions } : {}),
    ...(options.maxTurns ? { maxTurns: options.maxTurns } : {}),
    ...(options.approvalTimeoutMs ? { approvalTimeoutMs: options.approvalTimeoutMs } : {}),
  })
  const events: AgentEvent[] = []
  created.on('*', (event) => {
    events.push(event)
  })
  return { agent: created, provider, events }
}

export const ofType = <T extends AgentEvent['type']>(events: AgentEvent[], type: T) =>
  events.filter((e): e is Extract<AgentEvent, { type: T }> => e.type === type)

/**
 * A parent whose model asks `ask_child` for `task`, and a child whose only tool blocks until its
 * run is cancelled; both added to `t` and the children served.
 */
export async function parentOfBlockedChild(
  t: Topology,
  options: { task?: string; delegate?: DelegateOptions; parentScript?: ScriptStep[] } = {},
) {
  const blocking = blockingTool()
  const parent = agent({
    id: 'parent',
    tools: [delegateTool(t.parent, 'child', options.delegate)],
    script: [call('ask_child', { task: options.task ?? 'Take your time.' }), ...(options.parentScript ?? [])],
  })
  const child = agent({ id: 'child', tools: [blocking.tool], script: [call('wait_forever', {})] })
  t.parent.add(parent.agent)
  t.child.add(child.agent)
  await t.start()
  return { parent, child, blocking }
}

/** A tool that waits until its run is cancelled; says when it started and when its signal aborted. */
export function blockingTool(name = 'wait_forever') {
  const started = deferred<ToolContext>()
  const aborted = deferred<unknown>()
  const t = tool({
    name,
    description: 'Works for a long time.',
    schema: z.object({}),
    execute: (_args, context) =>
      new Promise((_resolve, reject) => {
        started.resolve(context)
        const onAbort = () => {
          aborted.resolve(context.signal.reason)
          reject(context.signal.reason)
        }
        if (context.signal.aborted) onAbort()
        else context.signal.addEventListener('abort', onAbort, { once: true })
      }),
  })
  return { tool: t, started, aborted }
}

/** A tool that counts how many of its calls run at once. */
export function concurrencyProbe(name = 'work', holdMs = 60) {
  let running = 0
  const stats = { max: 0, calls: [] as string[] }
  const t = tool({
    name,
    description: 'Does one piece of work.',
    schema: z.object({ item: z.string() }),
    execute: async ({ item }) => {
      running++
      stats.max = Math.max(stats.max, running)
      stats.calls.push(item)
      await new Promise((resolve) => setTimeout(resolve, holdMs))
      running--
      return `worked on ${item}`
    },
  })
  return { tool: t, stats }
}

export type { Deferred }
