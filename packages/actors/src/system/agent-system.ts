import { createHash } from 'node:crypto'
import { hostname } from 'node:os'
import {
  type Agent,
  type Clock,
  ConfigError,
  type IdGenerator,
  type Message,
  RunFailedError,
  type RunHandle,
  type RunResult,
  randomIds,
  systemClock,
} from '@signalbox/core'
import { type Bus, createSubjects, type Subjects, type Subscription } from '@signalbox/core/bus'
import { sleep } from '@signalbox/core/internal'
import type { RunStore } from '@signalbox/core/store'
import { type AgentConnection, connectAgent } from '../agents/agent-connection.ts'
import { sendSteering } from '../agents/clients.ts'
import type { TrustPolicy } from '../trust/policy.ts'
import type { Signer } from '../trust/sign.ts'
import type { EvidenceBook } from '../trust/signed-audit.ts'
import { ChildRunError } from './child-run-error.ts'
import { ChildSlots } from './child-slots.ts'
import type { Directory } from './directory.ts'
import { findLocalRun } from './local-reattach.ts'
import { type Reattach, runRemote } from './remote-run.ts'
import { repeat } from './repeat.ts'
import { RunHost } from './run-host.ts'
import { type ResumableAgent, RunTakeover, type TakeoverEvent } from './run-takeover.ts'
import { type CarriedLimits, type RunBudget, RunTreeLedger, type TreeLimits } from './tree-budget.ts'

export interface AgentSystemOptions {
  /** Without a bus, the system is one process; with one, agents are served and reached over it. */
  bus?: Bus
  subjects?: Subjects
  /** This process's id on the bus. Default `<hostname>-<pid>`. */
  hostId?: string
  directory?: Directory
  limits?: TreeLimits
  /**
   * A remote child is cancelled by its host when the parent stops sending heartbeats for this long.
   * Default 15 s; with `runs`, twice the takeover lease (60 s by default), so that the child of a
   * parent whose host died outlives the parent's takeover by another host (which re-attaches to it).
   */
  leaseMs?: number
  /**
   * A remote child that no host has answered for (none runs it, none stores it) and whose result
   * is not stored after this long is lost: its delegate call fails with `CHILD_LOST`. It covers a
   * takeover (the child's host died, another takes its stored run over once that host's lease is
   * out): keep it above the run store's lease. Default 60 s.
   */
  childLostAfterMs?: number
  /** Leases, heartbeats and directory refreshes run on it. */
  clock?: Clock
  ids?: IdGenerator
  /**
   * Stored runs: `serve()` resumes the runs of this system's agents (their own from before a
   * restart, and those whose host's lease expired), and keeps taking over orphans (`RunTakeover`).
   */
  runs?: { store: RunStore; leaseMs?: number; onEvent?(event: TakeoverEvent): void }
  /**
   * This host's key: cancels of remote child runs are signed with it (children with a trust policy
   * list its public key in `controllers`; without it, a child whose parent is gone still stops at
   * the end of its lease).
   */
  signer?: Signer
  /**
   * Who may steer and cancel the agents this system serves (`steerers`, `controllers`: operators,
   * and the keys of the parent hosts that delegate to them): steering and cancels must be signed
   * by a listed key (`connectAgent({ trust })`). Without one they are not checked.
   */
  trust?: TrustPolicy
  /** Accepted signed steering is kept here for the audit entry that records it (`signedAuditLog`). */
  evidence?: EvidenceBook
}

export interface SystemRunOptions {
  signal?: AbortSignal
  parentRunId?: string
  /** Run ids from the root down to the parent (empty or absent: a root run). */
  runPath?: string[]
  /** Agent ids of the `runPath` runs, in the same order. */
  agentPath?: string[]
  /** Hand-offs followed before giving up. Default 5. */
  maxHandoffs?: number
  /**
   * The run's id (default: a new one); the runs it hands off to get ids derived from it. A delegate
   * call derives it from its own run and call, so the same call finds the same child again.
   */
  runId?: string
  /**
   * Look for the run before starting it (a delegate call run again after a crash or a takeover):
   * its stored result, or the host that runs or stores it. `only`: never start it (nowhere:
   * `CHILD_LOST`); `first`: start it when it is nowhere.
   */
  reattach?: Reattach
}

/**
 * The agents a system knows, by id, with their output types (built by `add`): `run` types its
 * result by them. An agent whose id is not a literal type is not listed.
 */
export type KnownAgents = Record<string, unknown>

/** The output type of the agent `Id` in `Known`, `unknown` for an agent the system does not know. */
export type SystemOutput<Known extends KnownAgents, Id extends string> = Id extends keyof Known ? Known[Id] : unknown

export interface SystemRunResult<TOutput = unknown> extends RunResult<TOutput> {
  agentId: string
  /** The agent that gave the final answer (differs from `agentId` after a hand-off). */
  finishedBy: string
  /** Agents the conversation went through, in order. */
  handoffs: string[]
}

/** The lease a host takes on a stored run it resumes (renewed by the run while it goes on). */
const DEFAULT_RUN_LEASE_MS = 30_000

/** How often a serving host renews its directory entries. */
const DIRECTORY_REFRESH_MS = 10_000

/** See `AgentSystemOptions.childLostAfterMs`. */
const DEFAULT_CHILD_LOST_AFTER_MS = 60_000

/**
 * The id of the run that one call of a parent run starts (`attempt`: the delegate tool's retries,
 * `handoff`: the runs a hand-off chain goes through): the same for the same call, in any process,
 * so a call run again after a crash finds its child instead of starting a second one. Shaped like
 * the random ones (`run_` and a UUID: a name-based one, version 8 bits set, from a SHA-256).
 */
export function derivedRunId(parentRunId: string, callId: string, attempt = 1): string {
  const hex = createHash('sha256').update(`${parentRunId}\u0000${callId}\u0000${attempt}`).digest('hex').slice(0, 32)
  const variant = ((Number.parseInt(hex[16] as string, 16) & 0x3) | 0x8).toString(16)
  return `run_${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

/** What a child's host must hold its subtree to: the tree's depth, and the turns and tokens it has left. */
function carriedLimits(limits: CarriedLimits, budget: RunBudget): CarriedLimits {
  return {
    ...(limits.maxDepth === undefined ? {} : { maxDepth: limits.maxDepth }),
    ...(budget.turns === undefined ? {} : { maxTotalTurns: budget.turns }),
    ...(budget.tokens === undefined ? {} : { maxTotalTokens: budget.tokens }),
    ...(budget.runs === undefined ? {} : { maxTotalRuns: budget.runs }),
  }
}

/** The id of the run a hand-off starts: derived from the run that handed over. */
function handoffRunId(runId: string): string {
  return derivedRunId(runId, 'handoff', 1)
}

/**
 * Many agents as one system: each agent stays its own actor (own hooks, tools, reviewers);
 * the system runs them by id wherever they live, follows hand-offs, enforces a run tree's
 * limits, and makes sure no child outlives its parent.
 */
// biome-ignore lint/complexity/noBannedTypes: no agent known yet
export class AgentSystem<Known extends KnownAgents = {}> {
  readonly #signer: Signer | undefined
  readonly #trust: TrustPolicy | undefined
  readonly #evidence: EvidenceBook | undefined
  readonly hostId: string
  readonly subjects: Subjects
  readonly #bus: Bus | undefined
  readonly #directory: Directory | undefined
  readonly #ledger: RunTreeLedger
  readonly #childSlots: ChildSlots
  readonly #leaseMs: number
  readonly #childLostAfterMs: number
  readonly #clock: Clock
  readonly #ids: IdGenerator
  readonly #startedAt: number
  readonly #agents = new Map<string, Agent<any>>()
  readonly #runs: AgentSystemOptions['runs']
  #takeover: RunTakeover | undefined
  readonly #served: (Subscription | AgentConnection)[] = []
  readonly #host: RunHost | undefined
  readonly #stop = new AbortController()
  #stopRefresh: (() => void) | undefined

  constructor(options: AgentSystemOptions = {}) {
    this.#bus = options.bus
    // A NATS bus knows its deployment's prefix: use it unless told otherwise.
    const busPrefix = (options.bus as { prefix?: unknown } | undefined)?.prefix
    this.subjects = options.subjects ?? createSubjects(typeof busPrefix === 'string' ? busPrefix : undefined)
    this.#signer = options.signer
    this.#trust = options.trust
    this.#evidence = options.evidence
    this.hostId = options.hostId ?? `${hostname()}-${process.pid}`
    this.#directory = options.directory
    this.#ledger = new RunTreeLedger(options.limits)
    this.#childSlots = new ChildSlots(this.#ledger.limits.maxConcurrentChildren)
    this.#leaseMs = options.leaseMs ?? (options.runs ? 2 * (options.runs.leaseMs ?? DEFAULT_RUN_LEASE_MS) : 15_000)
    this.#childLostAfterMs = options.childLostAfterMs ?? DEFAULT_CHILD_LOST_AFTER_MS
    this.#clock = options.clock ?? systemClock
    this.#ids = options.ids ?? randomIds
    this.#startedAt = this.#clock.now()
    this.#runs = options.runs
    this.#host = options.bus
      ? new RunHost({
          bus: options.bus,
          subjects: this.subjects,
          hostId: this.hostId,
          clock: this.#clock,
          ledger: this.#ledger,
          stopping: this.#stop.signal,
          store: options.runs?.store,
          leaseMs: this.#leaseMs,
        })
      : undefined
  }

  /**
   * Adds a local agent, whatever its output type (its id must be unique in this process). Returns
   * the system typed with it: `run` of its id then resolves with its output type (when the id is a
   * literal type, as `createAgent({ id: 'booking', ... })` gives).
   */
  add<TOutput, TId extends string>(
    agent: Agent<TOutput, TId>,
  ): AgentSystem<string extends TId ? Known : Known & Record<TId, TOutput>> {
    if (this.#agents.has(agent.id)) throw new ConfigError(`An agent "${agent.id}" is already in this system.`)
    this.#agents.set(agent.id, agent)
    // Count every run's turns and tokens against its tree (only when a tree may have a budget:
    // a listener makes the agent copy the event for it). On a bus a tree may bring one from its root.
    if (!this.#ledger.counts && !this.#bus) return this as never
    // Each run asks before every turn whether the tree has any left (`RunTreeLedger.check`); a
    // reply that overshoots the tokens stops the whole tree at once.
    agent.on('turn.start', (event) => this.#ledger.countTurn(event.runPath[0] ?? event.runId))
    agent.on('model.response', (event) =>
      this.#ledger.countTokens(event.runPath[0] ?? event.runId, event.usage?.totalTokens ?? 0),
    )
    return this as never
  }

  get(agentId: string): Agent<any> | undefined {
    return this.#agents.get(agentId)
  }

  /**
   * Serves this process's agents on the bus: run requests on `agents.<id>.run`, events out,
   * steering and control in; announces them in the directory.
   */
  async serve(): Promise<void> {
    const bus = this.#requireBus('serve')
    const host = this.#host as RunHost
    const pending: Promise<void>[] = []
    for (const agent of this.#agents.values()) {
      const connection = connectAgent(agent, {
        bus,
        subjects: this.subjects,
        clock: this.#clock,
        ...(this.#trust ? { trust: this.#trust } : {}),
        ...(this.#evidence ? { evidence: this.#evidence } : {}),
      })
      this.#served.push(connection)
      pending.push(connection.ready)
      const subscription = bus.subscribe(this.subjects.agentRun(agent.id), (message) => host.accept(agent, message), {
        queue: `hosts-${agent.id}`,
      })
      this.#served.push(subscription)
      pending.push(subscription.ready)
    }
    await Promise.all(pending)
    if (this.#directory) {
      const announce = () =>
        Promise.all(
          [...this.#agents.values()].map((agent) =>
            this.#directory?.announce({
              agentId: agent.id,
              hostId: this.hostId,
              tools: agent.toolNames,
              pid: process.pid,
              hostname: hostname(),
              startedAt: this.#startedAt,
              refreshedAt: this.#clock.now(),
            }),
          ),
        ).catch(() => {})
      await announce()
      this.#stopRefresh = repeat(this.#clock, DIRECTORY_REFRESH_MS, () => void announce(), { unref: true })
    }
    if (this.#runs !== undefined) {
      const { store, leaseMs, onEvent } = this.#runs
      this.#takeover = new RunTakeover({
        store,
        hostId: this.hostId,
        leaseMs: leaseMs ?? DEFAULT_RUN_LEASE_MS,
        clock: this.#clock,
        agents: () => [...this.#agents.values()].map((agent) => this.#resumable(agent)),
        ...(onEvent ? { onEvent } : {}),
      })
      void this.#takeover.start()
    }
  }

  /**
   * Runs an agent by id: here if it is local, else on one of its hosts over the bus. Follows
   * hand-offs; the result says who finished.
   */
  run<Id extends string>(
    agentId: Id,
    input: string | Message[],
    options: SystemRunOptions = {},
  ): Promise<SystemRunResult<SystemOutput<Known, Id>>> {
    return this.#run(agentId, input, options, undefined)
  }

  /** `run`; `follows`: the stored root run whose pending hand-off the first run is (marked followed once it exists). */
  async #run<Id extends string>(
    agentId: Id,
    input: string | Message[],
    options: SystemRunOptions,
    follows: string | undefined,
  ): Promise<SystemRunResult<SystemOutput<Known, Id>>> {
    const handoffs: string[] = []
    let current: string = agentId
    let currentInput = input
    const maxHandoffs = options.maxHandoffs ?? 5
    let runId = options.runId ?? this.#ids('run')
    let previous = follows
    for (;;) {
      // The runs after a hand-off: each id derived from the run that handed over (the same in a
      // process that follows the hand-off after a crash), looked for like it (a call run again).
      const step = handoffs.length
      const runOptions: SystemRunOptions =
        step === 0 ? { ...options, runId } : { ...options, runId, ...(options.reattach ? { reattach: 'first' as const } : {}) }
      const handedOver = previous
      const onStarted = handedOver === undefined ? undefined : () => this.#handoffFollowed(handedOver)
      const result = await this.#runOnce(current, currentInput, runOptions, onStarted)
      // The answer of the agent asked, typed by it (after a hand-off, the last agent's: see `finishedBy`).
      if (!result.handoff) return { ...(result as RunResult<SystemOutput<Known, Id>>), agentId, finishedBy: current, handoffs }
      if (handoffs.length >= maxHandoffs) {
        throw new ChildRunError('HANDOFF_LIMIT', `More than ${maxHandoffs} hand-offs (${[current, ...handoffs].join(' → ')}).`)
      }
      handoffs.push(result.handoff.to)
      current = result.handoff.to
      currentInput = result.handoff.messages
      previous = runId
      runId = handoffRunId(runId)
    }
  }

  /**
   * The next agent's run of a hand-off exists now: the run that handed over is no longer pending
   * (a host taking over would otherwise follow it again; it would find the same run by its id).
   */
  async #handoffFollowed(runId: string): Promise<void> {
    const store = this.#runs?.store
    if (store === undefined) return
    const signal = AbortSignal.any([this.#stop.signal, AbortSignal.timeout(10_000)])
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        const stored = await store.load(runId, { signal })
        const handoff = stored?.checkpoint.handoff
        if (stored === undefined || handoff?.pending !== true) return
        const { lease: _lease, ...rest } = stored.checkpoint
        const checkpoint = { ...rest, handoff: { ...handoff, pending: false }, savedAt: this.#clock.now() }
        await store.save(checkpoint, { revision: stored.revision, signal })
        return
      } catch {
        // Written meanwhile (a host claimed it to follow it too), or the store failed: read again.
        // Left pending, whoever follows it finds the next run by its id.
        if (this.#stop.signal.aborted) return
      }
    }
  }

  /** A stored root run's pending hand-off, followed here (taken over: its process died before it started the next agent). */
  async #followStored(runId: string, signal: AbortSignal): Promise<void> {
    const store = this.#runs?.store
    if (store === undefined) return
    const stored = await store.load(runId, { signal })
    const handoff = stored?.checkpoint.handoff
    if (stored === undefined || handoff?.pending !== true) return
    const transcript = await store.readMessages(runId, { length: stored.checkpoint.transcript.length, signal })
    // What the run handed over: its transcript without the system prompt (an agent's own filter
    // lives in the process that ran it).
    const messages = transcript.filter((message) => message.role !== 'system')
    await this.#run(handoff.to, messages, { runId: handoffRunId(runId), reattach: 'first' }, runId).catch(() => {})
  }

  /** Cancels every run of a tree (by its root run id) that lives in this process. */
  cancelTree(rootRunId: string, reason: string): void {
    this.#ledger.cancel(rootRunId, reason)
  }

  /**
   * Aims a correction at one run of one agent of a tree (never at its siblings or ancestors):
   * here if the agent is local, else over the bus to the agent's hosts.
   */
  async steer(target: { agentId: string; runId: string; text: string; from?: string }): Promise<void> {
    const from = target.from ?? 'user'
    const handle = this.#agents.get(target.agentId)?.runs.get(target.runId)
    if (handle) return handle.steer(target.text, { from })
    const bus = this.#requireBus(`steer run ${target.runId} of "${target.agentId}" (it is not in this process)`)
    await sendSteering({ bus, subjects: this.subjects, agentId: target.agentId, runId: target.runId, text: target.text, from })
  }

  /**
   * Stops serving: takes no more run requests, cancels the runs it hosts for remote parents (they
   * publish their results), withdraws its directory entries. Local runs are their callers' to cancel.
   */
  async close(): Promise<void> {
    if (this.#stop.signal.aborted) return
    this.#stop.abort()
    this.#stopRefresh?.()
    this.#takeover?.stop()
    for (const served of this.#served) 'unsubscribe' in served ? served.unsubscribe() : served.close()
    await this.#host?.drain()
    if (this.#directory) {
      await Promise.all([...this.#agents.keys()].map((id) => this.#directory?.withdraw(id, this.hostId).catch(() => {})))
    }
  }

  /**
   * An agent as the takeover resumes its runs: a child run goes on for its parent (heartbeats
   * answered, result published, wherever the parent is); a root run's hand-off is followed here,
   * as the process that started it would have.
   */
  #resumable(agent: Agent<any>): ResumableAgent {
    return {
      id: agent.id,
      runs: agent.runs,
      resume: (runId, { signal }) => this.#resumeTaken(agent, runId, signal),
      followHandoff: (runId, { signal }) => this.#followStored(runId, signal),
    }
  }

  async #resumeTaken(agent: Agent<any>, runId: string, signal: AbortSignal): Promise<void> {
    const cancelled = new AbortController()
    const handle = (await agent.resume(runId, { signal: AbortSignal.any([signal, cancelled.signal]) })) as RunHandle<unknown>
    const { run } = handle.actor.getSnapshot().context
    if (run.runPath.length > 0 && this.#host) {
      this.#host.adopt(agent, handle, cancelled)
      return
    }
    handle.result
      .then(async (result) => {
        if (!result.handoff || this.#stop.signal.aborted) return
        await this.#run(
          result.handoff.to,
          result.handoff.messages,
          {
            runId: handoffRunId(runId),
            reattach: 'first',
            ...(run.runPath.length > 0 ? { runPath: run.runPath, agentPath: run.agentPath } : {}),
            ...(run.parentRunId ? { parentRunId: run.parentRunId } : {}),
          },
          runId,
        )
      })
      // The runs report their own ends (events, store); nobody waits on this one.
      .catch(() => {})
  }

  /** Resolves once the run's first checkpoint is in the system's store (or it ended, or the store never shows it). */
  async #whenStored(runId: string, ended: Promise<unknown>): Promise<void> {
    const store = this.#runs?.store
    if (store === undefined) return
    let over = false
    void ended.then(
      () => (over = true),
      () => (over = true),
    )
    const until = this.#clock.now() + 10_000
    while (!over && this.#clock.now() < until && !this.#stop.signal.aborted) {
      const stored = await store.load(runId, { signal: this.#stop.signal }).catch(() => undefined)
      if (stored !== undefined) return
      await sleep(20, { clock: this.#clock, signal: this.#stop.signal }).catch(() => {})
    }
  }

  /** Runs this process hosts for parents elsewhere, right now. */
  get hostedRuns(): number {
    return this.#host?.size ?? 0
  }

  /** One run; `onStarted` once it exists (started, or found), for a hand-off that it follows. */
  async #runOnce(
    agentId: string,
    input: string | Message[],
    options: SystemRunOptions,
    onStarted?: () => Promise<void>,
  ): Promise<RunResult<unknown>> {
    const budget = this.#ledger.admit(options.runPath ?? [])
    const release = options.parentRunId ? await this.#childSlots.acquire(options.parentRunId, options.signal) : () => {}
    try {
      const local = this.#agents.get(agentId)
      if (local) return await this.#runLocal(local, input, options, budget, onStarted)
      const bus = this.#requireBus(`run agent "${agentId}" (it is not in this process)`)
      return await runRemote({
        bus,
        subjects: this.subjects,
        clock: this.#clock,
        hostId: this.hostId,
        leaseMs: this.#leaseMs,
        lostAfterMs: this.#childLostAfterMs,
        ledger: this.#ledger,
        runId: options.runId ?? this.#ids('run'),
        agentId,
        input,
        budget,
        limits: carriedLimits(this.#ledger.limitsOf((options.runPath ?? [])[0]), budget),
        reattach: options.reattach,
        parentRunId: options.parentRunId,
        runPath: options.runPath,
        agentPath: options.agentPath,
        signer: this.#signer,
        signal: options.signal,
        onStarted,
      })
    } finally {
      release()
    }
  }

  async #runLocal(
    agent: Agent<any>,
    input: string | Message[],
    options: SystemRunOptions,
    budget: RunBudget,
    onStarted?: () => Promise<void>,
  ): Promise<RunResult<unknown>> {
    const runId = options.runId ?? this.#ids('run')
    // Running here already (a call run again finds its child, e.g. one this host took over).
    const running = agent.runs.get(runId) as RunHandle<unknown> | undefined
    if (running) {
      this.#host?.localParent(runId)
      void onStarted?.()
      return await running.result
    }
    if (options.reattach) {
      const found = await findLocalRun(agent, runId, {
        store: this.#runs?.store,
        clock: this.#clock,
        lostAfterMs: this.#childLostAfterMs,
        signal: options.signal,
        attached: (id) => this.#host?.localParent(id),
      })
      if (found) {
        void onStarted?.()
        return await found
      }
      if (options.reattach === 'only') {
        throw new ChildRunError(
          'CHILD_LOST',
          `The child run ${runId} of "${agent.id}" is nowhere: it does not run in this process and no run of it is stored.`,
          { runId, agentId: agent.id },
        )
      }
    }
    const runPath = options.runPath ?? []
    const rootRunId = runPath[0] ?? runId
    const tree = this.#ledger.open(rootRunId)
    this.#ledger.countRuns(runPath.length > 0 ? runPath : [runId], 1)
    const check = this.#ledger.check(rootRunId)
    const handle = agent.start(input, {
      ...(check ? { budget: check } : {}),
      runId,
      runPath,
      ...(options.agentPath ? { agentPath: options.agentPath } : {}),
      ...(options.parentRunId ? { parentRunId: options.parentRunId } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(budget.turns !== undefined ? { maxTurns: budget.turns } : {}),
      ...(budget.tokens !== undefined ? { maxTokens: budget.tokens } : {}),
    })
    tree.handles.add(handle)
    if (onStarted) void this.#whenStored(runId, handle.result).then(onStarted)
    try {
      return await handle.result
    } catch (error) {
      // The root of a tree stopped for its budget says so (its children were cancelled for it).
      if (runPath.length === 0 && tree.exceeded && RunFailedError.is(error)) {
        throw new RunFailedError({
          ...error.result,
          error: { code: 'TREE_BUDGET_EXCEEDED', message: `The run tree was stopped: ${tree.exceeded}.`, fault: 'user' },
        })
      }
      throw error
    } finally {
      this.#ledger.leave(rootRunId, handle)
    }
  }

  #requireBus(what: string): Bus {
    if (!this.#bus) throw new ConfigError(`Cannot ${what}: this agent system has no bus (pass { bus }).`)
    return this.#bus
  }
}

/**
 * A system of agents that delegate to, hand off to and supervise each other, within the limits
 * of the run tree, in this process or across processes on a bus.
 *
 * @example
 * ```ts
 * const system = createAgentSystem({ bus, limits: { maxDepth: 3, maxConcurrentChildren: 4, maxTotalTurns: 50 } })
 * system.add(trainsAgent).add(planner) // planner has delegateTool(system, 'trains')
 * await system.serve() // other processes can run these agents by id
 * const result = await system.run('planner', 'Two nights in Mar del Plata, train there on Friday.')
 * console.log(result.finishedBy, result.output)
 * ```
 */
// biome-ignore lint/complexity/noBannedTypes: no agent known yet
export function createAgentSystem(options: AgentSystemOptions = {}): AgentSystem<{}> {
  return new AgentSystem(options)
}
