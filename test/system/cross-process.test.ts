/**
 * Agent systems across processes, over the shared NATS server: a parent here delegates to agents
 * served by `signalbox host` in another process; cancelling the parent reaches the child there;
 * a parent killed with SIGKILL leaves no orphan (the host's lease runs out); a host stopped with
 * SIGTERM tells its runs' parents and leaves the directory.
 */

import { watchEvents } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { createAgentSystem, delegateTool, KvDirectory } from '@signalbox/actors/system'
import { directoryBucket } from '@signalbox/cli/internal'
import { type AgentEvent, createAgent, RunFailedError, type Tool, type ToolContext, tool } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { type Script, ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { z } from 'zod'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { cleanupServer, start, startHost } from './support.ts'

const HOST_MODULE = 'test/system/fixtures/child-host.ts'

async function bus(prefix: string, name: string): Promise<NatsBus> {
  const opened = await connectNatsBus({ servers: NATS_URL, prefix, name, drainTimeoutMs: 1_000 })
  onTestFinished(() => opened.close())
  return opened
}

/** A root agent in this process that delegates to `childId` (wherever it is served). */
function parentIn(system: ReturnType<typeof createAgentSystem>, childId: string, script: Script) {
  const provider = new ScriptedProvider({ model: 'parent', script })
  const parent = createAgent({ id: 'planner', provider, tools: [delegateTool(system, childId)] })
  system.add(parent)
  return { parent, provider }
}

function collectEvents(b: NatsBus, agentId: string) {
  const events: AgentEvent[] = []
  // watchEvents takes the prefix from `subjects`, not from the bus.
  const subscription = watchEvents({
    bus: b,
    subjects: createSubjects(b.prefix),
    agentId,
    onEvent: (event) => events.push(event),
  })
  onTestFinished(() => subscription.unsubscribe())
  return { events, ready: subscription.ready }
}

async function until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

describe('an agent in another process (signalbox host)', () => {
  it('delegation: the child’s answer comes back as the tool result; the host logs the run with its path', async () => {
    const prefix = uniquePrefix()
    cleanupServer(prefix)
    const host = startHost(HOST_MODULE, prefix, ['--host-id', 'stockroom-1', '--no-directory'])
    await host.waitFor('hosting 2 agents: stocker')
    const system = createAgentSystem({ bus: await bus(prefix, 'parent') })
    const { provider } = parentIn(system, 'stocker', [
      { toolCalls: [{ name: 'ask_stocker', arguments: { task: 'B3' } }] },
      {
        content: 'B3 is full.',
        expect: (r) =>
          r.messages.at(-1)?.content === 'Slot B3 now holds 12.' ? true : `got ${JSON.stringify(r.messages.at(-1))}`,
      },
    ])
    const result = await system.run('planner', 'Restock B3.')
    expect(result.output).toBe('B3 is full.')
    provider.assertDone()
    await host.waitFor(/← done\s+stocker/)
    expect(host.output()).toMatch(/→ run\s+stocker run_\w+ · parent run_\w+ \(planner › stocker\)/)
    await system.close()
  })

  it('cancelling the parent cancels the child in the other process: its run ends cancelled, its tool’s signal aborts', async () => {
    const prefix = uniquePrefix()
    cleanupServer(prefix)
    const host = startHost(HOST_MODULE, prefix, ['--no-directory'])
    await host.waitFor('hosting 2 agents')
    const parentBus = await bus(prefix, 'parent')
    const watched = collectEvents(parentBus, 'sleeper')
    await watched.ready
    const system = createAgentSystem({ bus: parentBus })
    parentIn(system, 'sleeper', [{ toolCalls: [{ name: 'ask_sleeper', arguments: { task: 'Wait for me.' } }] }])
    const controller = new AbortController()
    const running = system.run('planner', 'Go.', { signal: controller.signal }).catch((error: unknown) => error)

    const started = await host.waitFor(/TOOL_STARTED (run_\S+)/)
    const childRunId = /TOOL_STARTED (run_\S+)/.exec(started)?.[1] as string
    controller.abort('changed my mind')
    const failure = await running
    expect(failure).toBeInstanceOf(RunFailedError)
    expect((failure as RunFailedError).result.status).toBe('cancelled')

    await host.waitFor(`TOOL_ABORTED ${childRunId}`, 5_000)
    await until(() => watched.events.some((e) => e.type === 'run.end'), 5_000, 'the child’s run.end on the bus')
    const ended = watched.events.find((e) => e.type === 'run.end')
    expect(ended).toMatchObject({ runId: childRunId, status: 'cancelled', parentRunId: (failure as RunFailedError).result.runId })
    expect(JSON.stringify(ended)).toContain('the parent run was cancelled')
    await system.close()
  })

  it('SIGTERM on the host: the run in flight is cancelled, its parent is told, the directory entries go away', async () => {
    const prefix = uniquePrefix()
    const bucket = directoryBucket(prefix)
    cleanupServer(prefix, [bucket])
    const host = startHost(HOST_MODULE, prefix, ['--host-id', 'stockroom-2'])
    await host.waitFor('hosting 2 agents')
    const parentBus = await bus(prefix, 'parent')
    const directory = new KvDirectory(parentBus.connection, { bucket })
    const listed = await directory.list()
    expect(listed.map((e) => `${e.agentId}@${e.hostId}`).sort()).toEqual(['sleeper@stockroom-2', 'stocker@stockroom-2'])
    expect(listed.find((e) => e.agentId === 'sleeper')?.tools).toEqual(['wait_forever'])

    const system = createAgentSystem({ bus: parentBus })
    const { provider } = parentIn(system, 'sleeper', [
      { toolCalls: [{ name: 'ask_sleeper', arguments: { task: 'Wait.' } }] },
      {
        content: 'The host went away.',
        expect: (r) =>
          String(r.messages.at(-1)?.content).includes('shutting down') ? true : `got ${JSON.stringify(r.messages.at(-1))}`,
      },
    ])
    const running = system.run('planner', 'Go.')
    await host.waitFor('TOOL_STARTED')
    host.kill('SIGTERM')
    const result = await running
    expect(result.output).toBe('The host went away.')
    provider.assertDone()
    expect(String(provider.requests[1]?.messages.at(-1)?.content)).toContain('RUN_CANCELLED')
    expect(await host.exited).toEqual({ code: 0, signal: null })
    expect(host.output()).toContain('SIGTERM: stopping (1 run in flight are cancelled)')
    expect(host.output()).toContain('agent host stopped')
    expect(await directory.list()).toEqual([])
    await system.close()
  })
})

describe('the orphan guard across processes', () => {
  it('kill -9 of the parent’s process mid-child: the host cancels the child once the lease runs out', async () => {
    const prefix = uniquePrefix()
    cleanupServer(prefix)
    const leaseMs = 1_500
    // The child's host is this process: we watch its tool directly.
    const hostBus = await bus(prefix, 'host')
    const hostSystem = createAgentSystem({ bus: hostBus, hostId: 'sleeper-host' })
    let toolContext: ToolContext | undefined
    let abortedAt: number | undefined
    const waitForever: Tool<Record<string, never>> = tool({
      name: 'wait_forever',
      description: 'Works for a long time.',
      schema: z.object({}),
      execute: (_args, context) =>
        new Promise((_resolve, reject) => {
          toolContext = context
          context.signal.addEventListener('abort', () => {
            abortedAt = Date.now()
            reject(context.signal.reason)
          })
        }),
    })
    const sleeper = createAgent({
      id: 'sleeper',
      tools: [waitForever],
      provider: new ScriptedProvider({
        model: 'sleeper',
        script: () => ({ toolCalls: [{ name: 'wait_forever', arguments: {} }] }),
      }),
    })
    const ends: AgentEvent[] = []
    sleeper.on('run.end', (event) => {
      ends.push(event)
    })
    hostSystem.add(sleeper)
    await hostSystem.serve()
    onTestFinished(() => hostSystem.close())

    const parent = start(['test/system/fixtures/parent-process.ts'], { NATS_URL, PREFIX: prefix, LEASE_MS: String(leaseMs) })
    const printed = await parent.waitFor(/ROOT_STARTED (run_\S+)/)
    const rootRunId = /ROOT_STARTED (run_\S+)/.exec(printed)?.[1]
    await until(() => toolContext !== undefined, 10_000, 'the child’s tool starts')
    expect(toolContext?.runPath).toEqual([rootRunId])
    // Alive parent: the child outlives a whole lease.
    await new Promise((resolve) => setTimeout(resolve, leaseMs + 300))
    expect(abortedAt).toBeUndefined()

    const killedAt = Date.now()
    parent.kill('SIGKILL')
    await parent.exited
    await until(() => abortedAt !== undefined, leaseMs + 3_000, 'the host cancels the orphan')
    // Not at once (the last heartbeat still counts), and within about one lease.
    expect((abortedAt as number) - killedAt).toBeGreaterThanOrEqual(leaseMs / 2)
    expect((abortedAt as number) - killedAt).toBeLessThan(leaseMs + 1_500)
    await until(() => ends.length === 1, 3_000, 'the child run ends')
    expect(ends[0]).toMatchObject({ status: 'cancelled', runPath: [rootRunId] })
    expect(JSON.stringify(ends[0])).toContain('lease expired')
    expect(sleeper.runs.size).toBe(0)
  })
})

describe('a host’s limits and hand-offs on its log', () => {
  const RELAY_MODULE = 'test/system/fixtures/relay-host.ts'

  it('--max-total-runs: a tree that reaches the host’s run count starts no more runs there', async () => {
    const prefix = uniquePrefix()
    cleanupServer(prefix)
    // planner (here) › manager (the tree's first run on the host) › stocker (its second: over the host's limit).
    const host = startHost(RELAY_MODULE, prefix, ['--no-directory', '--max-total-runs', '1'])
    await host.waitFor('hosting 4 agents')
    const system = createAgentSystem({ bus: await bus(prefix, 'parent') })
    parentIn(system, 'manager', (request) => {
      const last = request.messages.at(-1)
      return last?.role === 'tool'
        ? { content: String(last.content) }
        : { toolCalls: [{ name: 'ask_manager', arguments: { task: 'B3' } }] }
    })
    const result = await system.run('planner', 'Restock B3.')
    expect(result.output).toMatch(/^manager read: .*TREE_BUDGET_EXCEEDED.*started all of its 1 runs/)
    expect(host.output()).not.toMatch(/→ run\s+stocker/)
    await system.close()
  })

  it('without the limit the same tree runs to the end (the limit, not the tree, stopped it)', async () => {
    const prefix = uniquePrefix()
    cleanupServer(prefix)
    const host = startHost(RELAY_MODULE, prefix, ['--no-directory'])
    await host.waitFor('hosting 4 agents')
    const system = createAgentSystem({ bus: await bus(prefix, 'parent') })
    parentIn(system, 'manager', (request) => {
      const last = request.messages.at(-1)
      return last?.role === 'tool'
        ? { content: String(last.content) }
        : { toolCalls: [{ name: 'ask_manager', arguments: { task: 'B3' } }] }
    })
    const result = await system.run('planner', 'Restock B3.')
    expect(result.output).toBe('manager read: Slot B3 now holds 12.')
    await system.close()
  })

  it('a run that hands off says so on the host’s log (run.end: handed off to <agent>)', async () => {
    const prefix = uniquePrefix()
    cleanupServer(prefix)
    const host = startHost(RELAY_MODULE, prefix, ['--no-directory'])
    await host.waitFor('hosting 4 agents')
    const system = createAgentSystem({ bus: await bus(prefix, 'parent') })
    const result = await system.run('front', 'I want my money back.')
    expect(result).toMatchObject({ finishedBy: 'billing', output: 'Billing here, about: I want my money back.' })
    await host.waitFor(/← done\s+front \S+ · 1 turn · handed off to billing \("a refund"\)/)
    await system.close()
  })
})
