/**
 * A run tree stays whole across crashes, takeovers and hosts, over real processes and the real
 * NATS server: a parent process delegates to `worker` on host processes that share a JetStream
 * KV run store; processes are killed with SIGKILL, runs are taken over by another host or resumed
 * in a new process. The parent always hears its child's real result (or a clear `CHILD_LOST`),
 * the child's side effect happens once, a hand-off goes on after a crash, and the root's depth
 * limit holds on a remote host.
 */
import { randomBytes } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { connectNatsBus } from '@signalbox/actors/nats'
import { KvRunStore } from '@signalbox/actors/store'
import { createAgentSystem, delegateTool, derivedRunId } from '@signalbox/actors/system'
import { createAgent } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { type CrashChild, startCrashChild } from '../support/crash-harness.ts'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import type { TreeHostConfig } from './fixtures/tree-host.ts'
import type { TreeParentConfig } from './fixtures/tree-parent.ts'
import { cleanupServer } from './support.ts'

const HOST = 'test/system/fixtures/tree-host.ts'
const PARENT = 'test/system/fixtures/tree-parent.ts'
/** The run store's lease: short, so a takeover comes quickly (renewed every half by the live owner). */
const STORE_LEASE_MS = 1_500

interface Printed {
  type: string
  host: string
  [key: string]: unknown
}

function printed(child: CrashChild): Printed[] {
  return child
    .stdout()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Printed)
}

async function next(
  child: CrashChild,
  type: string,
  where: (line: Printed) => boolean = () => true,
  timeoutMs = 45_000,
): Promise<Printed> {
  let exited = false
  void child.exited.then(() => {
    exited = true
  })
  const until = Date.now() + timeoutMs
  for (;;) {
    const found = printed(child).find((line) => line.type === type && where(line))
    if (found) return found
    if (exited || Date.now() > until)
      throw new Error(`no "${type}" line${exited ? ' (the process exited)' : ''}:\n${child.output()}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Watches the heartbeats a parent sends for `childRunId`: `first` resolves at the first one. */
async function heartbeatsOf(prefix: string, childRunId: string): Promise<{ first: Promise<void> }> {
  const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'heartbeat-watch' })
  onTestFinished(() => bus.close())
  let heard!: () => void
  const first = new Promise<void>((resolve) => {
    heard = resolve
  })
  const subscription = bus.subscribe(createSubjects(prefix).runHeartbeat(childRunId), () => heard())
  await subscription.ready
  return { first }
}

/** `root`, here: delegates to `middle` and answers with what it read. */
function rootAgent(system: ReturnType<typeof createAgentSystem>) {
  return createAgent({
    id: 'root',
    tools: [delegateTool(system, 'middle')],
    provider: new ScriptedProvider({
      model: 'root',
      script: (request) => {
        const last = request.messages.at(-1)
        return last?.role === 'tool'
          ? { content: `root read: ${String(last.content)}` }
          : { toolCalls: [{ name: 'ask_middle', arguments: { task: 'Go as deep as you can.' } }] }
      },
    }),
  })
}

async function setUp() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'durable-tree-'))
  const prefix = uniquePrefix()
  const bucket = `tree_${randomBytes(4).toString('hex')}`
  cleanupServer(prefix, [bucket])
  onTestFinished(() => rm(dir, { recursive: true, force: true }))
  const effects = path.join(dir, 'effects.txt')
  const effectLines = () => (existsSync(effects) ? readFileSync(effects, 'utf8').split('\n').filter(Boolean) : [])
  const spawned: CrashChild[] = []
  onTestFinished(async () => {
    for (const child of spawned) await child.kill().catch(() => {})
  })
  const host = async (hostId: string, extra: Partial<TreeHostConfig> = {}) => {
    const config: TreeHostConfig = {
      hostId,
      natsUrl: NATS_URL,
      prefix,
      bucket,
      storeLeaseMs: STORE_LEASE_MS,
      effects,
      ...extra,
    }
    const child = await startCrashChild(HOST, { env: { TREE_HOST: JSON.stringify(config) }, ready: '"serving"' })
    spawned.push(child)
    return child
  }
  const parent = async (mode: TreeParentConfig['mode'], extra: Partial<TreeParentConfig> = {}) => {
    const config: TreeParentConfig = {
      hostId: 'planner-host',
      natsUrl: NATS_URL,
      prefix,
      bucket,
      storeLeaseMs: STORE_LEASE_MS,
      leaseMs: 20_000,
      mode,
      runId: 'run-plan',
      task: 'inventory',
      ...extra,
    }
    const child = await startCrashChild(PARENT, { env: { TREE_PARENT: JSON.stringify(config) }, ready: '"ready"' })
    spawned.push(child)
    return child
  }
  return { prefix, bucket, effects, effectLines, host, parent }
}

describe('a run tree across crashes and takeovers', { timeout: 120_000 }, () => {
  it('a child taken over by another host delivers its real result to the waiting parent', async () => {
    const { host, parent, effectLines } = await setUp()
    const b1 = await host('host-b1')
    const a = await parent('start')
    const started = await next(b1, 'tool.start')
    const b2 = await host('host-b2')
    await b1.kill()

    const claimed = await next(b2, 'takeover', (line) => line.event === 'claimed' && line.runId === started.runId)
    expect(claimed.from).toBe('host-b1')
    // The resumed child runs its (idempotent) tool again on B2; the test lets it finish there.
    await next(b2, 'tool.start', (line) => line.runId === started.runId)
    b2.send('open inventory')

    const result = await next(a, 'result')
    expect(result.output).toBe('Planner read: Done: worked on inventory')
    expect(effectLines()).toEqual(['work inventory by host-b2'])
    expect(printed(b1).filter((line) => line.type === 'run.end')).toEqual([])
  })

  it('a parent killed while its child runs, resumed in a new process, re-attaches: the real result, one child', async () => {
    const { host, parent, effectLines, prefix } = await setUp()
    const b1 = await host('host-b1')
    const a1 = await parent('start')
    const started = await next(b1, 'tool.start')
    await a1.kill()

    // Any heartbeat for the child from now on comes from the resumed parent: it found its child.
    const beats = await heartbeatsOf(prefix, String(started.runId))
    const a2 = await parent('resume')
    expect((await next(a2, 'resumed')).runs).toEqual(['run-plan'])
    await beats.first
    b1.send('open inventory')

    const result = await next(a2, 'result')
    expect(result.output).toBe('Planner read: Done: worked on inventory')
    expect(printed(a2).filter((line) => line.type === 'tool.end')).toEqual([
      { type: 'tool.end', host: 'planner-host', runId: 'run-plan', outcome: 'executed' },
    ])
    expect(effectLines()).toEqual(['work inventory by host-b1'])
    // One child: one run of worker, started once.
    expect(printed(b1).filter((line) => line.type === 'run.start')).toEqual([
      { type: 'run.start', host: 'host-b1', agentId: 'worker', runId: started.runId, resumed: false },
    ])
  })

  it('a parent whose host is killed is taken over by another host, which re-attaches to the running child', async () => {
    const { host, effectLines, prefix } = await setUp()
    const b1 = await host('host-b1')
    const p1 = await host('host-p1', { serve: ['planner'], start: { agentId: 'planner', input: 'inventory', runId: 'run-plan' } })
    const started = await next(b1, 'tool.start')
    const p2 = await host('host-p2', { serve: ['planner'] })
    await p1.kill()

    const claimed = await next(p2, 'takeover', (line) => line.event === 'claimed' && line.runId === 'run-plan')
    expect(claimed.from).toBe('host-p1')
    // The parent's delegate call runs again on P2 and finds its child on B1 (it answers the heartbeats).
    const beats = await heartbeatsOf(prefix, String(started.runId))
    await beats.first
    b1.send('open inventory')
    const ended = await next(p2, 'run.end', (line) => line.agentId === 'planner')
    expect(ended).toMatchObject({ runId: 'run-plan', status: 'done', output: 'Planner read: Done: worked on inventory' })
    expect(effectLines()).toEqual(['work inventory by host-b1'])
    expect(printed(b1).filter((line) => line.type === 'run.start')).toHaveLength(1)
  })

  it('a child that finished while its parent was down: the resumed parent reads its stored result', async () => {
    const { host, parent, effectLines } = await setUp()
    const b1 = await host('host-b1')
    const a1 = await parent('start')
    await next(b1, 'tool.start')
    await a1.kill()
    b1.send('open inventory')
    const ended = await next(b1, 'run.end', (line) => line.agentId === 'worker')
    expect(ended.status).toBe('done')

    const a2 = await parent('resume')
    const result = await next(a2, 'result')
    expect(result.output).toBe('Planner read: Done: worked on inventory')
    expect(effectLines()).toEqual(['work inventory by host-b1'])
    expect(printed(b1).filter((line) => line.type === 'run.start')).toHaveLength(1)
  })

  it('a child in the parent’s own process: the resumed parent resumes it and reads its real result, one child', async () => {
    const { parent, effects, effectLines } = await setUp()
    const a1 = await parent('start', { localWorker: { effects } })
    const started = await next(a1, 'worker.tool.start')
    await a1.kill()

    const a2 = await parent('resume', { localWorker: { effects } })
    // The delegate call runs again, resumes the stored child (its tool, idempotent, runs again).
    const again = await next(a2, 'worker.tool.start')
    expect(again.runId).toBe(started.runId)
    a2.send('open inventory')
    const result = await next(a2, 'result')
    expect(result.output).toBe('Planner read: Done: worked on inventory')
    expect(effectLines()).toEqual(['work inventory by planner-host'])
  })

  it('a child gone everywhere (its host and its parent killed, nothing stored): CHILD_LOST, not a hang', async () => {
    const { host, parent, effectLines } = await setUp()
    // This host stores nothing: once it is gone, the child is nowhere.
    const b1 = await host('host-b1', { bucket: undefined })
    const a1 = await parent('start')
    await next(b1, 'tool.start')
    await a1.kill()
    await b1.kill()

    const began = Date.now()
    const a2 = await parent('resume', { childLostAfterMs: 2_000 })
    const result = await next(a2, 'result', () => true, 30_000)
    expect(String(result.output)).toContain('CHILD_LOST')
    expect(Date.now() - began).toBeLessThan(30_000)
    expect(effectLines()).toEqual([])
  })

  it('a hand-off survives a crash: the host that takes the run over starts the next agent; run.end carries the hand-off', async () => {
    const { host, bucket, prefix, effectLines } = await setUp()
    const runId = 'run-front'
    const h1 = await host('host-h1', {
      blockAfterHandoff: true,
      start: { agentId: 'front', input: 'I want my money back.', runId },
    })
    await next(h1, 'handed-off')
    // Kill it once the hand-off is stored (the tool's `finished` record keeps it).
    const probe = await connectNatsBus({ servers: NATS_URL, prefix, name: 'probe' })
    onTestFinished(() => probe.close())
    const store = new KvRunStore({ connection: probe.connection, bucket })
    for (;;) {
      const stored = await store.load(runId, { signal: AbortSignal.timeout(5_000) })
      if (stored?.checkpoint.ledger.some((entry) => entry.state === 'finished' && entry.result.handoff?.to === 'billing')) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const h2 = await host('host-h2')
    await h1.kill()

    await next(h2, 'takeover', (line) => line.event === 'claimed' && line.runId === runId)
    const frontEnd = await next(h2, 'run.end', (line) => line.agentId === 'front')
    expect(frontEnd).toMatchObject({ runId, status: 'done', handoff: { to: 'billing', reason: 'a refund' } })
    const billingEnd = await next(h2, 'run.end', (line) => line.agentId === 'billing')
    expect(billingEnd).toMatchObject({ status: 'done', output: 'Billing here, about: I want my money back.' })
    expect(printed(h1).filter((line) => line.type === 'run.start' && line.agentId === 'billing')).toEqual([])
    expect(effectLines()).toEqual([])
  })

  it('a hand-off whose end was stored but whose next agent had not started yet: another host starts it, once', async () => {
    const { host, bucket, prefix } = await setUp()
    const runId = 'run-front-end'
    // h1's write of front's end never returns once stored: killed there, nothing followed the hand-off.
    const h1 = await host('host-h1', {
      pauseAfterEndStored: 'front',
      start: { agentId: 'front', input: 'I want my money back.', runId },
    })
    await next(h1, 'end-stored', (line) => line.runId === runId)
    const h2 = await host('host-h2')
    await h1.kill()

    const billingEnd = await next(h2, 'run.end', (line) => line.agentId === 'billing')
    expect(billingEnd).toMatchObject({
      runId: derivedRunId(runId, 'handoff', 1),
      status: 'done',
      output: 'Billing here, about: I want my money back.',
    })
    const probe = await connectNatsBus({ servers: NATS_URL, prefix, name: 'probe' })
    onTestFinished(() => probe.close())
    const store = new KvRunStore({ connection: probe.connection, bucket })
    // run.end is emitted as the run ends; its end is stored right after (the run's result waits for it).
    const billingRuns = async () => {
      const { runs } = await store.list({ agentId: 'billing', signal: AbortSignal.timeout(5_000) })
      return runs.map((run) => [run.checkpoint.runId, run.checkpoint.status])
    }
    while (!(await billingRuns()).some(([, status]) => status === 'done')) await new Promise((resolve) => setTimeout(resolve, 20))
    expect(await billingRuns()).toEqual([[derivedRunId(runId, 'handoff', 1), 'done']])
    // Marked followed once billing's run existed (a write of its own, right after).
    for (;;) {
      const front = (await store.load(runId, { signal: AbortSignal.timeout(5_000) }))?.checkpoint
      expect(front).toMatchObject({ status: 'done', handoff: { to: 'billing', reason: 'a refund' } })
      if (front?.handoff?.pending === false) break
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(printed(h1).filter((line) => line.type === 'run.start' && line.agentId === 'billing')).toEqual([])
    expect(printed(h2).filter((line) => line.type === 'run.start' && line.agentId === 'billing')).toHaveLength(1)
  })

  it('the root’s depth limit holds on the host that took the child over (kept with the child’s run)', async () => {
    const { host, prefix } = await setUp()
    const b1 = await host('host-b1', { maxDepth: 4, middleWorks: true })
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'root', durable: { storage: 'memory' } })
    onTestFinished(() => bus.close())
    const system = createAgentSystem({ bus, subjects: createSubjects(prefix), hostId: 'root', limits: { maxDepth: 1 } })
    onTestFinished(() => system.close())
    const running = system.add(rootAgent(system)).run('root', 'Go.')
    const started = await next(b1, 'tool.start', (line) => line.task === 'middle')
    const b2 = await host('host-b2', { maxDepth: 4, middleWorks: true })
    await b1.kill()
    await next(b2, 'takeover', (line) => line.event === 'claimed' && line.runId === started.runId)
    await next(b2, 'tool.start', (line) => line.task === 'middle')
    b2.send('open middle')

    const result = await running
    expect(result.output).toMatch(/^root read: middle read: .*TREE_DEPTH_EXCEEDED.*the run tree’s limit is 1/)
    expect(
      printed(b2)
        .filter((line) => line.type === 'run.start')
        .map((line) => line.agentId),
    ).toEqual(['middle'])
  })

  it('the root’s depth limit holds on a remote host (whose own limit is higher)', async () => {
    const { host, prefix } = await setUp()
    const b1 = await host('host-b1', { bucket: undefined, maxDepth: 4 })
    const bus = await connectNatsBus({ servers: NATS_URL, prefix, name: 'root', durable: { storage: 'memory' } })
    onTestFinished(() => bus.close())
    const system = createAgentSystem({ bus, subjects: createSubjects(prefix), hostId: 'root', limits: { maxDepth: 1 } })
    onTestFinished(() => system.close())
    // root (depth 0, here) → middle (depth 1, on the host) → leaf (depth 2: over the root's limit).
    const result = await system.add(rootAgent(system)).run('root', 'Go.')
    expect(result.output).toMatch(/^root read: middle read: .*TREE_DEPTH_EXCEEDED.*the run tree’s limit is 1/)
    expect(
      printed(b1)
        .filter((line) => line.type === 'run.start')
        .map((line) => line.agentId),
    ).toEqual(['middle'])
  })
})
