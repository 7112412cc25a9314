/**
 * Run trees at scale on a 3-node JetStream cluster, shared by the cluster test (200 parents) and
 * the bench (1,000): `signalbox host` processes serve the child agent `worker` (an agent module,
 * `fixtures/worker-module.ts`) with one KV run store (R3) and an R3 stream; this process runs the
 * parents (each delegates one task to `worker`) and the reviewer service. Approvals are given to
 * the first half of the children at once and to the rest only after the faults (when asked): one
 * host SIGKILLed, then, a few seconds later, the node that leads the run bucket's stream. What it
 * returns is measured, not judged: the test and the bench decide what to assert or print.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { serveReviewer } from '@signalbox/actors'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { createAgentSystem, delegateTool } from '@signalbox/actors/system'
import { type ApprovalDecision, type ApprovalRequest, createAgent } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import { ScriptedProvider } from '@signalbox/core/testing'
import { SIGNALBOX } from '../support/built.ts'
import type { NatsCluster } from '../support/nats-cluster.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const WORKER = 'test/cluster/fixtures/worker-module.ts'

export interface TreeScenarioOptions {
  cluster: NatsCluster
  parents: number
  /** `signalbox host` processes serving `worker`. Default 3. */
  hosts?: number
  /** Kill a host, then the run bucket's stream leader, once half the children applied their change. */
  faults: boolean
  /** The lease hosts take on stored runs (`--lease`). Default 3 s. */
  leaseMs?: number
  /** Between the host's SIGKILL and the node's. Default 3 s (the issue saw stalls at 2-4 s). */
  nodeDelayMs?: number
  /** How long the parents may take, in all. Default 60 s. */
  deadlineMs?: number
  log?(line: string): void
  /** Keep each host's whole output in `<dir>/<host>.log`. */
  outputDir?: string
}

export interface TreeScenarioResult {
  parents: number
  /** Parent runs that ended `done` with their child's answer. */
  finished: number
  /** Why the others did not (`task-7: ...`, or still waiting at the deadline). */
  failures: string[]
  /** How many times each task's side effect ran (from the effects file the hosts' tool appends to). */
  effects: Map<string, number>
  /** `approval.granted` audit entries stored, and decisions stored on the decisions subject. */
  granted: number
  decisions: number
  /** Child runs the killed host had not finished, and how many of them another host claimed. */
  orphaned: number
  claimed: number
  /**
   * Runs of the dead host that two hosts were both told they had claimed. nats-server before the
   * fix of nats-io/nats-server#4320 (2.9.10 here) may accept two compare-and-set writes at one
   * revision on a replicated stream; the run store's claim keys (a create per epoch) keep it at 0.
   */
  doubleClaims: number
  /** Milliseconds from the host's SIGKILL to the first claim of each of its runs by another host. */
  takeoverMs: number[]
  /** From the first parent's start to the last parent's end. */
  totalMs: number
  /** The hosts' output, for a failure's message. */
  hostOutput: string
}

interface HostProc {
  id: string
  child: ChildProcess
  output: string
  /** Child runs this host started (run ids), in order, with whether they ended. */
  runs: Map<string, boolean>
  /** Runs it claimed from another host: run id -> when this process read the claim. */
  claims: Map<string, { from: string | undefined; at: number }>
  exited: Promise<void>
}

export async function runTreeScenario(options: TreeScenarioOptions): Promise<TreeScenarioResult> {
  const { cluster, parents } = options
  const log = options.log ?? (() => {})
  const leaseMs = options.leaseMs ?? 3_000
  const prefix = `t${randomBytes(6).toString('hex')}.v1`
  const bucket = `runs_${randomBytes(4).toString('hex')}`
  const subjects = createSubjects(prefix)
  const dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-tree-'))
  const effectsFile = path.join(dir, 'effects')
  await writeFile(effectsFile, '')
  const buses: NatsBus[] = []
  const hosts: HostProc[] = []
  const cleanups: (() => unknown)[] = []
  const open = async (name: string) => {
    const bus = await connectNatsBus({
      servers: cluster.urls,
      prefix,
      name: `${name}-${prefix}`,
      // The stream in three copies, before any host starts (hosts with --replicas 3 ask the same).
      durable: { replicas: 3 },
      reconnectTimeWaitMs: 100,
      pingIntervalMs: 1_000,
      drainTimeoutMs: 500,
    })
    buses.push(bus)
    return bus
  }
  try {
    const admin = await open('admin')
    for (let i = 1; i <= (options.hosts ?? 3); i++) hosts.push(startHost(`h${i}`))
    await Promise.all(hosts.map((host) => untilOutput(host, 'hosting 1 agent', 60_000)))
    log(`hosts ready: ${hosts.map((h) => h.id).join(', ')}`)

    // The reviewer: approves the first half at once, the rest once `release()` is called.
    const half = Math.ceil(parents / 2)
    let decided = 0
    let release: () => void = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const reviewerBus = await open('reviewer')
    const service = serveReviewer({
      bus: reviewerBus,
      subjects,
      agentId: 'worker',
      reviewer: {
        async review(request: ApprovalRequest): Promise<ApprovalDecision> {
          if (++decided > half) await released
          return {
            requestId: request.requestId,
            callId: request.callId,
            digest: request.digest,
            approved: true,
            reviewer: 'ops',
            decidedAt: Date.now(),
          }
        },
      },
    })
    cleanups.push(() => service.close())
    await service.ready

    const parentBus = await open('parents')
    const system = createAgentSystem({ bus: parentBus, subjects, hostId: 'parents', limits: { maxConcurrentChildren: 4 } })
    cleanups.push(() => system.close())
    const planner = createAgent({
      id: 'planner',
      tools: [delegateTool(system, 'worker')],
      maxTurns: 3,
      provider: new ScriptedProvider({
        record: false,
        script: (request) => {
          const answer = request.messages.find((m) => m.role === 'tool')
          if (answer) return { content: String(answer.content) }
          const task = String(request.messages.find((m) => m.role === 'user')?.content)
          return { toolCalls: [{ name: 'ask_worker', arguments: { task } }] }
        },
      }),
    })
    system.add(planner)

    const started = Date.now()
    const deadline = AbortSignal.timeout(options.deadlineMs ?? 60_000)
    const outcomes = Array.from({ length: parents }, (_, i) =>
      system.run('planner', `task-${i}`, { signal: deadline }).then(
        (result) => ({ ok: result.output === `applied task-${i}`, why: `answered ${JSON.stringify(result.output)}` }),
        (error: unknown) => ({ ok: false, why: String((error as Error)?.message ?? error) }),
      ),
    )
    const ends = Promise.all(outcomes).then((all) => ({ all, at: Date.now() }))

    await until(async () => (await readEffects(effectsFile)).size >= half, 60_000, `${half} applied changes`)
    log(`${half} changes applied after ${Date.now() - started} ms`)
    let killedAt = 0
    // The host with the most runs in flight (waiting for their approval) is the one to die.
    const inFlight = (host: HostProc) => [...host.runs.values()].filter((ended) => !ended).length
    const victim = hosts.reduce((most, host) => (inFlight(host) > inFlight(most) ? host : most))
    if (options.faults) {
      killedAt = Date.now()
      victim.child.kill('SIGKILL')
      await victim.exited
      log(`SIGKILL ${victim.id} at ${killedAt} (${inFlight(victim)} runs in flight)`)
      await new Promise((resolve) => setTimeout(resolve, options.nodeDelayMs ?? 3_000))
      const jsm = await admin.manager()
      const leader = (await jsm.streams.info(`KV_${bucket}`)).cluster?.leader as string
      await cluster.node(leader).kill()
      log(`SIGKILL node ${leader} at ${Date.now()} (the run bucket's leader) at +${Date.now() - killedAt} ms`)
      cleanups.push(() => cluster.node(leader).restart())
    }
    release()
    const { all, at: endedAt } = await ends
    const failures = all.flatMap((outcome, i) => (outcome.ok ? [] : [`task-${i}: ${outcome.why}`]))
    log(`${parents - failures.length}/${parents} parents finished in ${endedAt - started} ms`)

    const orphans = options.faults ? [...victim.runs].filter(([, ended]) => !ended).map(([runId]) => runId) : []
    // The first claim of each of the dead host's runs (and whether two hosts were told they won one:
    // `doubleClaims`).
    const firstClaim = new Map<string, number>()
    const claimedBy = new Map<string, number>()
    for (const host of hosts) {
      if (options.faults && host === victim) continue
      for (const [runId, claim] of host.claims) {
        if (!options.faults || claim.from !== victim.id || !orphans.includes(runId)) continue
        firstClaim.set(runId, Math.min(firstClaim.get(runId) ?? Number.POSITIVE_INFINITY, claim.at - killedAt))
        claimedBy.set(runId, (claimedBy.get(runId) ?? 0) + 1)
      }
    }
    const takeoverMs = [...firstClaim.values()]
    const doubleClaims = [...claimedBy.values()].filter((count) => count > 1).length
    if (options.faults) {
      const p50 = takeoverMs.sort((a, b) => a - b)[Math.floor(takeoverMs.length / 2)]
      log(
        `${takeoverMs.length}/${orphans.length} runs of ${victim.id} taken over: p50 ${p50} ms, max ${takeoverMs.at(-1)} ms after its SIGKILL`,
      )
    }
    const jsm = await admin.manager()
    const stored = async (subject: string) =>
      (await jsm.streams.info(admin.streamName, { subjects_filter: subject })).state.subjects?.[subject] ?? 0
    return {
      parents,
      finished: parents - failures.length,
      failures,
      effects: await readEffects(effectsFile),
      granted: await stored(subjects.audit('worker', 'approval.granted')),
      decisions: await stored(subjects.approvalDecisions('worker')),
      orphaned: orphans.length,
      claimed: takeoverMs.length,
      doubleClaims,
      takeoverMs: takeoverMs.sort((a, b) => a - b),
      totalMs: endedAt - started,
      hostOutput: hosts.map((host) => `--- ${host.id}\n${host.output.split('\n').slice(-40).join('\n')}`).join('\n'),
    }
  } finally {
    for (const host of hosts) {
      if (host.child.exitCode === null && host.child.signalCode === null) host.child.kill('SIGKILL')
    }
    await Promise.all(hosts.map((host) => host.exited))
    if (options.outputDir) {
      for (const host of hosts) await writeFile(path.join(options.outputDir, `${host.id}.log`), host.output)
    }
    for (const cleanup of cleanups.reverse())
      await Promise.resolve()
        .then(cleanup)
        .catch(() => {})
    const admin = buses[0]
    if (admin) {
      for (const stream of [admin.streamName, `KV_${bucket}`]) {
        await admin.request(`$JS.API.STREAM.DELETE.${stream}`, '', { timeoutMs: 3_000 }).catch(() => {})
      }
    }
    await Promise.allSettled(buses.map((bus) => bus.close()))
    await rm(dir, { recursive: true, force: true })
  }

  function startHost(id: string): HostProc {
    const child = spawn(
      process.execPath,
      [
        ...SIGNALBOX.slice(1),
        'host',
        WORKER,
        '--scripted',
        '--nats',
        cluster.urls.join(','),
        '--prefix',
        prefix,
        '--host-id',
        id,
        '--no-directory',
        '--run-bucket',
        bucket,
        '--replicas',
        '3',
        '--lease',
        String(leaseMs),
        '--json',
      ],
      {
        cwd: ROOT,
        env: { ...process.env, NO_COLOR: '1', WORKER_EFFECTS: effectsFile, WORKER_HOST: id },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    const host: HostProc = {
      id,
      child,
      output: '',
      runs: new Map(),
      claims: new Map(),
      exited: new Promise((resolve) => child.once('exit', () => resolve())),
    }
    let partial = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      const text = partial + chunk.toString('utf8')
      host.output += chunk.toString('utf8')
      const lines = text.split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) {
        if (!line.startsWith('{')) continue
        let record: { type?: string; runId?: string; from?: string; at?: number }
        try {
          record = JSON.parse(line)
        } catch {
          continue
        }
        if (record.runId === undefined) continue
        if (record.type === 'run.start' && !host.runs.has(record.runId)) host.runs.set(record.runId, false)
        else if (record.type === 'run.end') host.runs.set(record.runId, true)
        else if (record.type === 'claimed') host.claims.set(record.runId, { from: record.from, at: record.at ?? Date.now() })
      }
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      host.output += chunk.toString('utf8')
    })
    return host
  }
}

/** Waits for `text` in a host's output; fails if the host exits first. */
function untilOutput(host: HostProc, text: string, timeoutMs: number): Promise<void> {
  return until(
    () => {
      if (host.child.exitCode !== null) throw new Error(`host ${host.id} exited:\n${host.output}`)
      return host.output.includes(text)
    },
    timeoutMs,
    `${host.id} to print "${text}"`,
  )
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

async function readEffects(file: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>()
  for (const line of (await readFile(file, 'utf8')).split('\n')) {
    const task = line.split(' ')[0]
    if (task) counts.set(task, (counts.get(task) ?? 0) + 1)
  }
  return counts
}
