import { hostname } from 'node:os'
import {
  AbortedError,
  type Agent,
  type BudgetCheck,
  type Bus,
  BusNoRespondersError,
  type Clock,
  ConfigError,
  createSubjects,
  decodeMessage,
  ErrorMessage,
  encodeMessage,
  errorMessage,
  type IdGenerator,
  type Message,
  PROTOCOL_VERSION,
  RunAcceptedMessage,
  RunFailedError,
  type RunHandle,
  RunHeartbeatMessage,
  type RunRequestMessage,
  RunRequestMessage as RunRequestSchema,
  type RunResult,
  type RunResultMessage,
  RunResultMessage as RunResultSchema,
  randomIds,
  type SerializedError,
  SignalboxError,
  type Subjects,
  type Subscription,
  serializeError,
  systemClock,
} from '@signalbox/core'
import { z } from 'zod'
import { type AgentConnection, connectAgent } from '../agent-connection.ts'
import { sendControl, sendSteering } from '../clients.ts'
import type { Directory } from './directory.ts'

/** Limits for one run tree (a root run and every run it delegates to, in any process). */
export interface TreeLimits {
  /** Deepest delegation below the root (root = 0). Default 4. */
  maxDepth?: number
  /** Children of one parent running at once; more wait their turn. Default 8. */
  maxConcurrentChildren?: number
  /** Turns summed over the tree, root included. */
  maxTotalTurns?: number
  /** Tokens summed over the tree, root included. */
  maxTotalTokens?: number
}

export interface AgentSystemOptions {
  /** Without a bus, the system is one process; with one, agents are served and reached over it. */
  bus?: Bus
  subjects?: Subjects
  /** This process's id on the bus. Default `<hostname>-<pid>`. */
  hostId?: string
  directory?: Directory
  limits?: TreeLimits
  /** A remote child is cancelled by its host when the parent stops sending heartbeats for this long. Default 15 s. */
  leaseMs?: number
  clock?: Clock
  ids?: IdGenerator
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
}

export interface SystemRunResult extends RunResult {
  agentId: string
  /** The agent that gave the final answer (differs from `agentId` after a hand-off). */
  finishedBy: string
  /** Agents the conversation went through, in order. */
  handoffs: string[]
}

/** A child could not start or ended badly; `fault` tells whether to retry. */
export class ChildRunError extends SignalboxError {
  constructor(code: string, message: string, details?: Record<string, unknown>) {
    super(code, message, { fault: 'runtime', ...(details ? { details } : {}) })
  }
}

interface TreeState {
  turns: number
  tokens: number
  /** Every run in this process that belongs to the tree, to cancel them all at once. */
  handles: Set<RunHandle>
  /** Set once the tree went over its turns or tokens (the runs were cancelled for it). */
  exceeded?: string
}

/** How long `close()` waits for the runs it hosts to publish their (cancelled) results. */
const CLOSE_GRACE_MS = 3_000

const HEARTBEATS_PER_LEASE = 3

/**
 * Many agents as one system: each agent stays its own actor (own hooks, tools, reviewers);
 * the system runs them by id wherever they live, follows hand-offs, enforces a run tree's
 * limits, and makes sure no child outlives its parent.
 */
export class AgentSystem {
  readonly hostId: string
  readonly subjects: Subjects
  readonly #bus: Bus | undefined
  readonly #directory: Directory | undefined
  readonly #limits: Required<Pick<TreeLimits, 'maxDepth' | 'maxConcurrentChildren'>> & TreeLimits
  readonly #leaseMs: number
  readonly #clock: Clock
  readonly #ids: IdGenerator
  readonly #agents = new Map<string, Agent>()
  readonly #trees = new Map<string, TreeState>()
  readonly #childSlots = new Map<string, { active: number; waiting: Set<() => void> }>()
  readonly #served: (Subscription | AgentConnection)[] = []
  /** Runs this host started for remote parents, until their result is published. */
  readonly #hosted = new Set<Promise<unknown>>()
  readonly #stop = new AbortController()
  #refresh: ReturnType<typeof setInterval> | undefined

  constructor(options: AgentSystemOptions = {}) {
    this.#bus = options.bus
    // A NATS bus knows its deployment's prefix: use it unless told otherwise.
    const busPrefix = (options.bus as { prefix?: unknown } | undefined)?.prefix
    this.subjects = options.subjects ?? createSubjects(typeof busPrefix === 'string' ? busPrefix : undefined)
    this.hostId = options.hostId ?? `${hostname()}-${process.pid}`
    this.#directory = options.directory
    this.#limits = { maxDepth: 4, maxConcurrentChildren: 8, ...options.limits }
    this.#leaseMs = options.leaseMs ?? 15_000
    this.#clock = options.clock ?? systemClock
    this.#ids = options.ids ?? randomIds
  }

  /** Adds a local agent (its id must be unique in this process). */
  add(agent: Agent): this {
    if (this.#agents.has(agent.id)) throw new ConfigError(`An agent "${agent.id}" is already in this system.`)
    this.#agents.set(agent.id, agent)
    // Count every run's turns and tokens against its tree (only when the tree has a budget:
    // a listener makes the agent copy the event for it).
    const { maxTotalTurns, maxTotalTokens } = this.#limits
    if (maxTotalTurns === undefined && maxTotalTokens === undefined) return this
    // Each run asks before every turn whether the tree has any left (`#budgetCheck`); a reply
    // that overshoots the tokens stops the whole tree at once.
    agent.on('turn.start', (event) => {
      const tree = this.#trees.get(event.runPath[0] ?? event.runId)
      if (tree) tree.turns++
    })
    agent.on('model.response', (event) => {
      const rootRunId = event.runPath[0] ?? event.runId
      const tree = this.#trees.get(rootRunId)
      if (!tree) return
      tree.tokens += event.usage?.totalTokens ?? 0
      this.#stopIfOver(rootRunId)
    })
    return this
  }

  get(agentId: string): Agent | undefined {
    return this.#agents.get(agentId)
  }

  /**
   * Serves this process's agents on the bus: run requests on `agents.<id>.run`, events out,
   * steering and control in; announces them in the directory.
   */
  async serve(): Promise<void> {
    const bus = this.#requireBus('serve')
    const pending: Promise<void>[] = []
    for (const agent of this.#agents.values()) {
      const connection = connectAgent(agent, { bus, subjects: this.subjects, clock: this.#clock })
      this.#served.push(connection)
      pending.push(connection.ready)
      const subscription = bus.subscribe(this.subjects.agentRun(agent.id), (message) => this.#onRunRequest(agent, message), {
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
      this.#refresh = setInterval(announce, 10_000)
      this.#refresh.unref?.()
    }
  }

  readonly #startedAt = Date.now()

  /**
   * Runs an agent by id: here if it is local, else on one of its hosts over the bus. Follows
   * hand-offs; the result says who finished.
   */
  async run(agentId: string, input: string | Message[], options: SystemRunOptions = {}): Promise<SystemRunResult> {
    const handoffs: string[] = []
    let current = agentId
    let currentInput = input
    const maxHandoffs = options.maxHandoffs ?? 5
    for (;;) {
      const result = await this.#runOnce(current, currentInput, options)
      if (!result.handoff) return { ...result, agentId, finishedBy: current, handoffs }
      if (handoffs.length >= maxHandoffs) {
        throw new ChildRunError('HANDOFF_LIMIT', `More than ${maxHandoffs} hand-offs (${[current, ...handoffs].join(' → ')}).`)
      }
      handoffs.push(result.handoff.to)
      current = result.handoff.to
      currentInput = result.handoff.messages
    }
  }

  /** Cancels every run of a tree (by its root run id) that lives in this process. */
  cancelTree(rootRunId: string, reason: string): void {
    for (const handle of [...(this.#trees.get(rootRunId)?.handles ?? [])]) handle.cancel(reason)
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
    if (this.#refresh) clearInterval(this.#refresh)
    for (const served of this.#served) 'unsubscribe' in served ? served.unsubscribe() : served.close()
    const hosted = Promise.allSettled([...this.#hosted])
    let timer: ReturnType<typeof setTimeout> | undefined
    await Promise.race([hosted, new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)))])
    clearTimeout(timer)
    if (this.#directory) {
      await Promise.all([...this.#agents.keys()].map((id) => this.#directory?.withdraw(id, this.hostId).catch(() => {})))
    }
  }

  /** Runs this process hosts for parents elsewhere, right now. */
  get hostedRuns(): number {
    return this.#hosted.size
  }

  // --- runs ---------------------------------------------------------------------------------

  async #runOnce(agentId: string, input: string | Message[], options: SystemRunOptions): Promise<RunResult> {
    const runPath = options.runPath ?? []
    const depth = runPath.length
    if (depth > this.#limits.maxDepth) {
      throw new ChildRunError(
        'TREE_DEPTH_EXCEEDED',
        `Delegation is ${depth} levels deep; the limit is ${this.#limits.maxDepth}.`,
        {
          depth,
        },
      )
    }
    const rootRunId = runPath[0]
    // A root starts with the whole budget; a child with what its tree has left.
    const budget = rootRunId ? this.#remaining(rootRunId) : this.#remaining(undefined)
    if (budget.turns !== undefined && budget.turns <= 0) {
      throw new ChildRunError('TREE_BUDGET_EXCEEDED', `The run tree used all of its ${this.#limits.maxTotalTurns} turns.`)
    }
    if (
      rootRunId &&
      this.#limits.maxTotalTokens !== undefined &&
      (this.#trees.get(rootRunId)?.tokens ?? 0) >= this.#limits.maxTotalTokens
    ) {
      throw new ChildRunError('TREE_BUDGET_EXCEEDED', `The run tree used all of its ${this.#limits.maxTotalTokens} tokens.`)
    }
    const release = options.parentRunId ? await this.#acquireChildSlot(options.parentRunId, options.signal) : () => {}
    try {
      const local = this.#agents.get(agentId)
      if (local) return await this.#runLocal(local, input, options, budget)
      return await this.#runRemote(agentId, input, options, budget)
    } finally {
      release()
    }
  }

  async #runLocal(
    agent: Agent,
    input: string | Message[],
    options: SystemRunOptions,
    budget: { turns?: number; tokens?: number },
  ): Promise<RunResult> {
    const runId = this.#ids('run')
    const runPath = options.runPath ?? []
    const rootRunId = runPath[0] ?? runId
    const tree = this.#tree(rootRunId)
    const check = this.#budgetCheck(rootRunId)
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
    try {
      return await handle.result
    } catch (error) {
      // The root of a tree stopped for its budget says so (its children were cancelled for it).
      if (runPath.length === 0 && tree.exceeded && error instanceof RunFailedError) {
        throw new RunFailedError({
          ...error.result,
          error: { code: 'TREE_BUDGET_EXCEEDED', message: `The run tree was stopped: ${tree.exceeded}.`, fault: 'user' },
        })
      }
      throw error
    } finally {
      tree.handles.delete(handle)
      if (tree.handles.size === 0) this.#trees.delete(rootRunId)
    }
  }

  async #runRemote(
    agentId: string,
    input: string | Message[],
    options: SystemRunOptions,
    budget: { turns?: number; tokens?: number },
  ): Promise<RunResult> {
    const bus = this.#requireBus(`run agent "${agentId}" (it is not in this process)`)
    const runId = this.#ids('run')
    const signal = options.signal
    if (signal?.aborted) throw new AbortedError('The run was cancelled before it started.')
    const settled = new AbortController()
    let resolveResult!: (result: RunResultMessage) => void
    const resultPromise = new Promise<RunResultMessage>((resolve) => {
      resolveResult = resolve
    })
    const resultSubscription = bus.durableConsume(
      this.subjects.runResult(runId),
      (message) => {
        message.ack()
        const decoded = decodeMessage(message.data, RunResultSchema, { maxBytes: bus.maxPayload })
        if (decoded.ok && decoded.value.runId === runId) resolveResult(decoded.value)
      },
      { deliverAll: true, signal: settled.signal },
    )
    let heartbeat: ReturnType<typeof setInterval> | undefined
    let onAbort: (() => void) | undefined
    try {
      await resultSubscription.ready
      const request: RunRequestMessage = {
        v: PROTOCOL_VERSION,
        type: 'run.request',
        runId,
        agentId,
        input: input as RunRequestMessage['input'],
        ...(options.parentRunId ? { parentRunId: options.parentRunId } : {}),
        runPath: options.runPath ?? [],
        ...(options.agentPath && options.agentPath.length > 0 ? { agentPath: options.agentPath } : {}),
        ...(budget.turns !== undefined ? { maxTurns: budget.turns } : {}),
        ...(budget.tokens !== undefined ? { maxTokens: budget.tokens } : {}),
        leaseMs: this.#leaseMs,
        requestedBy: this.hostId,
      }
      let reply: Awaited<ReturnType<Bus['request']>>
      try {
        reply = await bus.request(this.subjects.agentRun(agentId), encodeMessage(request), {
          timeoutMs: 10_000,
          ...(signal ? { signal } : {}),
        })
      } catch (error) {
        if (error instanceof BusNoRespondersError) {
          throw new ChildRunError('AGENT_UNAVAILABLE', `No host serves agent "${agentId}" right now.`, { agentId })
        }
        // Cancelled while the request was out: a host may have started the child already.
        if (signal?.aborted) this.#cancelRemote(bus, agentId, runId)
        throw error
      }
      const accepted = decodeMessage(reply.data, z.discriminatedUnion('type', [RunAcceptedMessage, ErrorMessage]), {
        maxBytes: bus.maxPayload,
      })
      if (!accepted.ok) throw accepted.error
      if (accepted.value.type === 'error') {
        throw new ChildRunError(accepted.value.error.code, accepted.value.error.message, { agentId })
      }
      const beat = () => {
        const message: RunHeartbeatMessage = { v: PROTOCOL_VERSION, type: 'run.heartbeat', runId, at: this.#clock.now() }
        try {
          bus.publish(this.subjects.runHeartbeat(runId), encodeMessage(message))
        } catch {
          // Missing one beat is fine: the lease allows several.
        }
      }
      heartbeat = setInterval(beat, Math.max(50, Math.floor(this.#leaseMs / HEARTBEATS_PER_LEASE)))
      const cancelled = new Promise<never>((_, reject) => {
        onAbort = () => {
          // The parent stopped: stop the child where it runs, then report the cancellation.
          this.#cancelRemote(bus, agentId, runId)
          reject(new AbortedError('The parent run was cancelled; the child was told to stop.'))
        }
        if (signal?.aborted) onAbort()
        else signal?.addEventListener('abort', onAbort, { once: true })
      })
      cancelled.catch(() => {})
      const message = await Promise.race([resultPromise, cancelled])
      // What the child used counts against the tree here too (its turns were counted on its host).
      const tree = this.#trees.get((options.runPath ?? [])[0] ?? '')
      if (tree) {
        tree.turns += message.turns
        tree.tokens += message.usage.totalTokens
      }
      return fromResultMessage(message)
    } finally {
      if (heartbeat) clearInterval(heartbeat)
      if (onAbort) signal?.removeEventListener('abort', onAbort)
      settled.abort()
      resultSubscription.unsubscribe()
    }
  }

  #cancelRemote(bus: Bus, agentId: string, runId: string): void {
    sendControl({
      bus,
      agentId,
      subjects: this.subjects,
      request: { type: 'control.cancel', runId, reason: 'the parent run was cancelled', from: this.hostId },
    }).catch(() => {})
  }

  /** Host side: start the requested run, reply at once, publish the result when it ends. */
  #onRunRequest(agent: Agent, message: Parameters<Parameters<Bus['subscribe']>[1]>[0]): void {
    const bus = this.#bus as Bus
    const decoded = decodeMessage(message.data, RunRequestSchema, { maxBytes: bus.maxPayload })
    if (!decoded.ok) {
      message.respond(encodeMessage(errorMessage(decoded.error.toJSON())))
      return
    }
    const request = decoded.value
    if (request.agentId !== agent.id) {
      message.respond(
        encodeMessage(errorMessage({ code: 'AGENT_UNKNOWN', message: `This subject serves "${agent.id}".` }, request.runId)),
      )
      return
    }
    if (this.#stop.signal.aborted) {
      message.respond(
        encodeMessage(errorMessage({ code: 'HOST_STOPPING', message: `Host ${this.hostId} is shutting down.` }, request.runId)),
      )
      return
    }
    // The host holds its own limit too: a parent elsewhere may have a deeper one.
    if (request.runPath.length > this.#limits.maxDepth) {
      const refusal = {
        code: 'TREE_DEPTH_EXCEEDED',
        message: `Delegation is ${request.runPath.length} levels deep; this host's limit is ${this.#limits.maxDepth}.`,
      }
      message.respond(encodeMessage(errorMessage(refusal, request.runId)))
      return
    }
    const cancelled = new AbortController()
    const rootRunId = request.runPath[0] ?? request.runId
    const tree = this.#tree(rootRunId)
    const check = this.#budgetCheck(rootRunId)
    let handle: RunHandle
    try {
      handle = agent.start(request.input as string | Message[], {
        ...(check ? { budget: check } : {}),
        runId: request.runId,
        runPath: request.runPath,
        ...(request.agentPath ? { agentPath: request.agentPath } : {}),
        ...(request.parentRunId ? { parentRunId: request.parentRunId } : {}),
        ...(request.maxTurns ? { maxTurns: request.maxTurns } : {}),
        ...(request.maxTokens ? { maxTokens: request.maxTokens } : {}),
        signal: cancelled.signal,
      })
    } catch (error) {
      if (tree.handles.size === 0) this.#trees.delete(rootRunId)
      message.respond(encodeMessage(errorMessage(serializeError(error), request.runId)))
      return
    }
    tree.handles.add(handle)
    // Orphan guard: no heartbeat from the parent for a whole lease and the child stops.
    let lease: ReturnType<typeof setTimeout> | undefined
    const renew = () => {
      if (lease) clearTimeout(lease)
      if (!request.leaseMs) return
      lease = setTimeout(
        () => cancelled.abort(new AbortedError('the parent stopped sending heartbeats (lease expired)')),
        request.leaseMs,
      )
    }
    renew()
    const heartbeats = bus.subscribe(this.subjects.runHeartbeat(request.runId), (beat) => {
      const parsed = decodeMessage(beat.data, RunHeartbeatMessage, { maxBytes: bus.maxPayload })
      if (parsed.ok) renew()
    })
    const stopOnClose = () => cancelled.abort(new AbortedError('the host is shutting down'))
    this.#stop.signal.addEventListener('abort', stopOnClose, { once: true })
    const accepted: RunAcceptedMessage = {
      v: PROTOCOL_VERSION,
      type: 'run.accepted',
      runId: request.runId,
      agentId: agent.id,
      hostId: this.hostId,
    }
    message.respond(encodeMessage(accepted))

    const publish = (result: RunResult, error?: SerializedError) => {
      const out: RunResultMessage = {
        v: PROTOCOL_VERSION,
        type: 'run.result',
        runId: request.runId,
        agentId: agent.id,
        status: result.status,
        output: result.output,
        ...(error ? { error: { code: error.code, message: error.message } } : {}),
        turns: result.turns,
        usage: result.usage,
        ...(result.handoff ? { handoff: result.handoff as RunResultMessage['handoff'] } : {}),
        hostId: this.hostId,
      }
      return bus
        .durablePublish(this.subjects.runResult(request.runId), encodeMessage(out), { msgId: `result-${request.runId}` })
        .catch(() => {})
    }
    const finished = handle.result
      .then(
        (result) => publish(result),
        (error) => {
          const result = (error as { result?: RunResult }).result
          return publish(result ?? emptyResult(request.runId, 'failed'), result?.error ?? serializeError(error))
        },
      )
      .finally(() => {
        if (lease) clearTimeout(lease)
        heartbeats.unsubscribe()
        tree.handles.delete(handle)
        if (tree.handles.size === 0) this.#trees.delete(rootRunId)
        this.#stop.signal.removeEventListener('abort', stopOnClose)
        this.#hosted.delete(finished)
      })
    this.#hosted.add(finished)
  }

  // --- limits -------------------------------------------------------------------------------

  #tree(rootRunId: string): TreeState {
    let tree = this.#trees.get(rootRunId)
    if (!tree) {
      tree = { turns: 0, tokens: 0, handles: new Set() }
      this.#trees.set(rootRunId, tree)
    }
    return tree
  }

  #remaining(rootRunId: string | undefined): { turns?: number; tokens?: number } {
    const tree = rootRunId === undefined ? undefined : this.#trees.get(rootRunId)
    const used = tree ?? { turns: 0, tokens: 0 }
    return {
      ...(this.#limits.maxTotalTurns !== undefined ? { turns: this.#limits.maxTotalTurns - used.turns } : {}),
      ...(this.#limits.maxTotalTokens !== undefined ? { tokens: Math.max(1, this.#limits.maxTotalTokens - used.tokens) } : {}),
    }
  }

  /**
   * Stops the tree once it is over budget, or (`needsAnotherTurn`) once it has nothing left for
   * the turn that must come next.
   */
  #stopIfOver(rootRunId: string): void {
    const tree = this.#trees.get(rootRunId)
    const limit = this.#limits.maxTotalTokens
    if (!tree || tree.exceeded || limit === undefined || tree.tokens <= limit) return
    tree.exceeded = `it used ${tree.tokens} of its ${limit} tokens`
    this.cancelTree(rootRunId, `the run tree went over its budget: ${tree.exceeded}`)
  }

  /** What every run of a tree asks before each turn: is anything left for one more? */
  #budgetCheck(rootRunId: string): BudgetCheck | undefined {
    const { maxTotalTurns, maxTotalTokens } = this.#limits
    if (maxTotalTurns === undefined && maxTotalTokens === undefined) return undefined
    return () => {
      const tree = this.#trees.get(rootRunId)
      if (!tree) return undefined
      if (maxTotalTurns !== undefined && tree.turns >= maxTotalTurns) {
        return { code: 'TREE_BUDGET_EXCEEDED', message: `The run tree used ${tree.turns} of its ${maxTotalTurns} turns.` }
      }
      if (maxTotalTokens !== undefined && tree.tokens >= maxTotalTokens) {
        return { code: 'TREE_BUDGET_EXCEEDED', message: `The run tree used ${tree.tokens} of its ${maxTotalTokens} tokens.` }
      }
      return undefined
    }
  }

  /** A slot among the parent's `maxConcurrentChildren`; waits (first come, first served) when all are taken. */
  async #acquireChildSlot(parentRunId: string, signal: AbortSignal | undefined): Promise<() => void> {
    let slot = this.#childSlots.get(parentRunId)
    if (!slot) {
      slot = { active: 0, waiting: new Set() }
      this.#childSlots.set(parentRunId, slot)
    }
    const s = slot
    if (signal?.aborted) throw new AbortedError('Cancelled before the child started.')
    if (s.active >= this.#limits.maxConcurrentChildren || s.waiting.size > 0) {
      // The slot is handed over by `release` (active stays counted), so nobody can jump the queue.
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal?.removeEventListener('abort', onAbort)
          resolve()
        }
        const onAbort = () => {
          // A waiter that gives up must not swallow the next hand-over.
          s.waiting.delete(wake)
          if (s.active === 0 && s.waiting.size === 0) this.#childSlots.delete(parentRunId)
          reject(new AbortedError('Cancelled while waiting for a child slot.'))
        }
        s.waiting.add(wake)
        signal?.addEventListener('abort', onAbort, { once: true })
      })
    } else {
      s.active++
    }
    let released = false
    return () => {
      if (released) return
      released = true
      const next = s.waiting.values().next().value
      if (next) {
        s.waiting.delete(next)
        next()
        return
      }
      s.active--
      if (s.active === 0) this.#childSlots.delete(parentRunId)
    }
  }

  #requireBus(what: string): Bus {
    if (!this.#bus) throw new ConfigError(`Cannot ${what}: this agent system has no bus (pass { bus }).`)
    return this.#bus
  }
}

function fromResultMessage(message: RunResultMessage): RunResult {
  const result: RunResult = {
    runId: message.runId,
    status: message.status,
    output: message.output,
    stopReason: undefined,
    error: message.error,
    turns: message.turns,
    usage: message.usage,
    messages: [],
    pendingSteering: [],
    ...(message.handoff ? { handoff: message.handoff as RunResult['handoff'] } : {}),
  }
  if (message.status !== 'done') {
    throw new ChildRunError(message.error?.code ?? 'CHILD_FAILED', message.error?.message ?? `The child run ${message.status}.`, {
      runId: message.runId,
      status: message.status,
    })
  }
  return result
}

function emptyResult(runId: string, status: 'failed' | 'cancelled'): RunResult {
  return {
    runId,
    status,
    output: '',
    stopReason: undefined,
    error: undefined,
    turns: 0,
    usage: { promptTokens: 0, completionTokens: 0, totalTokens: 0 },
    messages: [],
    pendingSteering: [],
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
export function createAgentSystem(options: AgentSystemOptions = {}): AgentSystem {
  return new AgentSystem(options)
}
