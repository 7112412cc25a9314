import { hostname } from 'node:os'
import type { Actor } from 'xstate'
import { whenAborted } from './abort.ts'
import {
  type AgentOptions,
  MemoryAuditLog,
  RunFailedError,
  type RunHandle,
  type RunOptions,
  type RunResult,
} from './agent-options.ts'
import { type Clock, systemClock } from './clock.ts'
import { asError, ConfigError, RunCancelledError } from './errors.ts'
import { type AgentEventType, EventEmitter, type EventListener } from './events.ts'
import type { AuditLog } from './hitl/types.ts'
import { HookChain } from './hooks.ts'
import { type IdGenerator, randomIds } from './ids.ts'
import { type Instrumentation, Instruments } from './instrumentation.ts'
import { runEvent } from './machine/actors.ts'
import { type AgentMachine, agentMachine } from './machine/agent-machine.ts'
import { type AgentParts, bindAgentParts, createAgentParts } from './machine/agent-parts.ts'
import type { AgentOutput, SteeringItem } from './machine/context.ts'
import { RunActors } from './machine/run-actors.ts'
import { type BudgetCheck, defaultRetryPolicy } from './machine/runtime.ts'
import { resumeWait } from './machine/waits.ts'
import type { RunWorker } from './machine/worker.ts'
import type { Message } from './messages.ts'
import { isName, NAME_RULE } from './names.ts'
import { type OutputSpec, outputSpec } from './output.ts'
import type { Provider } from './provider/provider.ts'
import { toRunResult } from './run-result.ts'
import type { Schema, SchemaOutput } from './schema.ts'
import type { StoredRun } from './store/checkpoint.ts'
import { RunStoreError } from './store/errors.ts'
import { restoreRun } from './store/restore-run.ts'
import { type ResumeAllResult, type ResumeOptions, resumeEvery } from './store/resume-all.ts'
import { RunJournal } from './store/run-journal.ts'
import type { RunStore } from './store/run-store.ts'
import { type RunStream, streamRun } from './stream.ts'
import { assertToolName, type Tool, toToolSpec } from './tool.ts'
import type { ToolList } from './tool-calls.ts'

export {
  type AgentOptions,
  MemoryAuditLog,
  RunFailedError,
  type RunHandle,
  type RunOptions,
  type RunResult,
} from './agent-options.ts'

/**
 * An agent definition. Each `run()` is one XState actor running the agent machine; several
 * runs of one agent may be in flight at once.
 */
export class Agent<TOutput = string, TId extends string = string> {
  /** The agent's id; its literal type when `createAgent` was given one (`AgentSystem.run` types its result by it). */
  readonly id: TId
  /** The agent machine: one for every agent; this agent's runtime is bound to each run's actor. */
  readonly machine: AgentMachine = agentMachine
  readonly audit: AuditLog
  readonly #events: EventEmitter
  readonly #options: AgentOptions
  readonly #clock: Clock
  readonly #ids: IdGenerator
  readonly #maxTurns: number
  readonly #active = new Map<string, RunHandle<TOutput>>()
  readonly #output: OutputSpec<unknown> | undefined
  readonly #handoffFilters = new Map<string, (messages: readonly Message[]) => Message[]>()
  readonly #budgetChecks = new Map<string, BudgetCheck>()
  #toolNames: string[]
  /** The tools as given (`tools`), and as the runs call them (wrapped by the instrumentations; one map, updated in place). */
  #given: Tool<any>[]
  readonly #tools: Map<string, Tool<unknown>>
  readonly #store: RunStore | undefined
  readonly #journals: Map<string, RunJournal> | undefined
  readonly #hostId: string
  readonly #leaseMs: number
  /** Stored tool results are what the model read (see `AgentOptions.storeRawToolOutput`). */
  readonly #masksToolOutput: boolean
  #queuedSteering: SteeringItem[] = []
  /** The last durable steering message consumed (stream sequence), when a connection reports it. */
  #steeringSeq: number | undefined
  readonly #instruments = new Instruments()
  readonly #parts: AgentParts
  /** Makes the runs' actors (sharing one actor system unless the agent is inspected). */
  readonly #actors: RunActors

  constructor(options: AgentOptions) {
    if (!options?.provider || typeof options.provider.complete !== 'function') {
      throw new ConfigError('createAgent needs a provider (e.g. new OpenAIProvider({ baseURL, model })).')
    }
    const maxTurns = options.maxTurns ?? 10
    if (!Number.isInteger(maxTurns) || maxTurns < 1)
      throw new ConfigError(`maxTurns must be a positive integer, got ${maxTurns}.`)
    this.id = (options.id ?? 'agent') as TId
    assertAgentId(this.id)
    this.#options = options
    this.#maxTurns = maxTurns
    this.#clock = options.clock ?? systemClock
    this.#ids = options.ids ?? randomIds
    const reportInternalError = options.onInternalError ?? (() => {})
    // The error handler is user code too: if it throws, the run still goes on.
    const onInternalError = (error: unknown, where: string) => {
      try {
        reportInternalError(error, where)
      } catch {
        // nothing left to report to
      }
    }
    this.#actors = new RunActors(this.#clock, options.inspect)
    this.#events = new EventEmitter({ onListenerError: (error) => onInternalError(error, 'event listener') })
    this.audit = options.audit ?? new MemoryAuditLog()

    const tools = this.#toolMap(options.tools ?? [])
    this.#tools = tools
    this.#given = [...(options.tools ?? [])]
    this.#toolNames = [...tools.keys()]
    this.#store = options.store
    this.#journals = options.store ? new Map() : undefined
    this.#hostId = options.hostId ?? hostname()
    this.#leaseMs = options.leaseMs ?? 30_000
    if (!Number.isInteger(this.#leaseMs) || this.#leaseMs < 3)
      throw new ConfigError(`leaseMs must be an integer of at least 3, got ${options.leaseMs}.`)
    this.#output = options.output === undefined ? undefined : outputSpec(options.output)
    const audit = this.audit
    const hooks = new HookChain(this.#instruments.hooks(options.hooks))
    this.#masksToolOutput = hooks.has('afterToolExecution') && options.storeRawToolOutput !== true
    this.#parts = createAgentParts({
      agentId: this.id,
      provider: options.provider,
      tools,
      toolSpecs: [...tools.values()].map(toToolSpec),
      hooks,
      reviewer: this.#instruments.reviewer(options.reviewer),
      events: this.#events,
      recordAudit: (entry) => {
        // The audit log may be remote (JetStream): its failures are reported, never thrown into the run.
        try {
          const pending = audit.record(entry)
          if (pending && typeof pending.catch === 'function') pending.catch((error) => onInternalError(error, 'audit'))
        } catch (error) {
          onInternalError(error, 'audit')
        }
      },
      clock: this.#clock,
      ids: this.#ids,
      retry: { ...defaultRetryPolicy, ...options.retry },
      approvalTimeoutMs: options.approvalTimeoutMs ?? 5 * 60_000,
      steeringPolicy: options.steeringPolicy ?? 'cancel-next',
      handoffFilters: this.#handoffFilters,
      budgetChecks: this.#budgetChecks,
      journals: this.#journals,
      output: this.#output,
    })
  }

  /** Observe the agent's runs. Returns an unsubscribe function. */
  on<T extends AgentEventType | '*'>(type: T, listener: EventListener<T>): () => void {
    return this.#events.on(type, listener)
  }

  /** Runs this agent's hooks, tools and reviewer calls inside `instrumentation`'s scope (e.g. tracing). Returns a detach function. */
  instrument(instrumentation: Instrumentation): () => void {
    return this.#instruments.attach(instrumentation)
  }

  /** Runs to the end. Resolves with the final answer; rejects with `RunFailedError` if it fails or is cancelled. */
  run(input: string | Message[], options: RunOptions = {}): Promise<RunResult<TOutput>> {
    return this.start(input, options).result
  }

  /**
   * Starts a run and streams its events (text deltas, tool starts and ends, approvals, steering),
   * ending with `{ type: 'result', result }`. Only this run's events; leaving the loop cancels it.
   *
   * @example
   * ```ts
   * for await (const item of agent.stream('Book me a seat.', { signal })) {
   *   if (item.type === 'text.delta') process.stdout.write(item.delta)
   *   if (item.type === 'result') console.log(item.result.output)
   * }
   * ```
   */
  stream(input: string | Message[], options: RunOptions = {}): RunStream<RunResult<TOutput>> {
    const runId = options.runId ?? this.#ids('run')
    return streamRun<RunResult<TOutput>>(
      { on: (type, listener) => this.on(type, listener), start: (id) => this.start(input, { ...options, runId: id }) },
      runId,
    )
  }

  /** Starts a run and returns its handle at once. */
  start(input: string | Message[], options: RunOptions = {}): RunHandle<TOutput> {
    const runId = options.runId ?? this.#ids('run')
    const steering = this.#queuedSteering
    this.#queuedSteering = []
    const actor = this.#actors.create(runId, {
      input: {
        agentId: this.id,
        runId,
        ...(options.runPath ? { runPath: options.runPath } : {}),
        ...(options.agentPath && options.agentPath.length > 0 ? { agentPath: options.agentPath } : {}),
        ...(options.parentRunId ? { parentRunId: options.parentRunId } : {}),
        input,
        ...(this.#options.instructions ? { instructions: this.#options.instructions } : {}),
        maxTurns: options.maxTurns === undefined ? this.#maxTurns : Math.max(1, Math.min(this.#maxTurns, options.maxTurns)),
        ...(options.maxTokens === undefined ? {} : { maxTokens: options.maxTokens }),
        ...(options.treeLimits ? { treeLimits: options.treeLimits } : {}),
        steering,
        startedAt: this.#clock.now(),
      },
    })
    const worker = bindAgentParts(actor, this.#parts)
    if (options.budget) this.#budgetChecks.set(runId, options.budget)
    const journal = this.#journal(runId, options.runPath ?? [], undefined)
    const handle = this.#launch(actor, worker, runId, options.signal, journal, false)
    // A signal that was already aborted has cancelled the run before it started.
    if (actor.getSnapshot().status === 'active') actor.send({ type: 'agent.start' })
    return handle
  }

  /**
   * Continues a stored run in the state it was saved in (needs a `store`): a wait for a person
   * re-attaches to the same request with its deadline, a model call in flight is made again, and
   * a tool call in flight follows the ledger (never run twice unless the tool is `idempotent`).
   * Takes the run's lease first: `RUN_LEASE_HELD` while another owner's lease has not expired.
   */
  async resume(runId: string, options: ResumeOptions = {}): Promise<RunHandle<TOutput>> {
    const store = this.#requireStore('resume')
    const signal = options.signal ?? new AbortController().signal
    if (this.#active.has(runId)) throw new RunStoreError('RUN_NOT_RESUMABLE', runId, 'it is already running in this process.')
    const { actor, claimed } = await restoreRun({
      store,
      runId,
      agentId: this.id,
      owner: this.#hostId,
      leaseMs: this.#leaseMs,
      clock: this.#clock,
      createActor: (snapshot) => this.#actors.create(runId, { snapshot }),
      signal,
    })
    signal.throwIfAborted()
    const worker = bindAgentParts(actor, this.#parts)
    this.#announceResumed(actor, claimed.checkpoint.carry ?? {})
    return this.#launch(actor, worker, runId, options.signal, this.#journal(runId, claimed.checkpoint.runPath, claimed), true)
  }

  /**
   * A resumed run says so (`run.start` with `resumed`) before anything else it emits, inside the
   * instrumentations' scope with what they kept with it (a tracer continues the run's trace).
   */
  #announceResumed(actor: Actor<AgentMachine>, carried: Readonly<Record<string, string>>): void {
    if (!this.#events.has('run.start')) return
    const { run } = actor.getSnapshot().context
    this.#instruments.run(
      () => ({ kind: 'resume', agentId: this.id, runId: run.runId, carried }),
      () => this.#events.emit(runEvent(run, this.#clock.now(), { type: 'run.start', input: run.input, resumed: true })),
    )
  }

  /**
   * Resumes every stored run of this agent that is not finished and that no other live owner
   * holds. A run that cannot be read is reported in `errors` (naming it); the others resume.
   */
  async resumeAll(options: ResumeOptions = {}): Promise<ResumeAllResult<RunHandle<TOutput>>> {
    const store = this.#requireStore('resumeAll')
    const signal = options.signal ?? new AbortController().signal
    return resumeEvery({
      store,
      agentId: this.id,
      owner: this.#hostId,
      now: this.#clock.now(),
      signal,
      isActive: (runId) => this.#active.has(runId),
      // Without a caller's signal each run gets its own (one shared signal would collect a listener per run).
      resume: (runId) => this.resume(runId, options.signal ? { signal } : {}),
    })
  }

  /** The run's journal when the agent has a store; registered before the run's actors start. */
  #journal(runId: string, runPath: string[], resumed: StoredRun | undefined) {
    if (this.#store === undefined) return undefined
    const instruments = this.#instruments
    const run = { agentId: this.id, runId }
    return new RunJournal({
      carry: () => instruments.carry(run),
      store: this.#store,
      runId,
      agentId: this.id,
      runPath,
      owner: this.#hostId,
      leaseMs: this.#leaseMs,
      clock: this.#clock,
      masksToolOutput: this.#masksToolOutput,
      ...(resumed ? { resumed } : {}),
      ...(this.#steeringSeq === undefined ? {} : { steeringCursor: this.#steeringSeq }),
    })
  }

  /**
   * For the steering consumer of a durable agent: the last correction (stream sequence) `runId`
   * has seen. A correction at or below it was already delivered to the run before a restart.
   */
  steeringCursor(runId: string): number | undefined {
    return this.#journals?.get(runId)?.steeringCursor
  }

  /**
   * For the steering consumer of a durable agent: when `runId` began (its checkpoint's `createdAt`).
   * A run that never saw a correction takes the general ones stored since then, not older ones.
   */
  steeringSince(runId: string): number | undefined {
    return this.#journals?.get(runId)?.createdAt
  }

  /**
   * Where a steering consumer should start so that the runs in flight (resumed ones) miss nothing:
   * after the lowest cursor, or at the start of the log for a run that never saw a correction.
   * `undefined` when no durable run is in flight (the consumer then starts at new messages).
   */
  steeringResumeFrom(): number | undefined {
    let lowest: number | undefined
    for (const journal of this.#journals?.values() ?? []) {
      const cursor = journal.steeringCursor ?? 0
      if (lowest === undefined || cursor < lowest) lowest = cursor
    }
    return lowest === undefined ? undefined : lowest + 1
  }

  /** The steering consumer got message `seq`: every run in flight has now seen it (kept in their checkpoints). */
  steeringConsumed(seq: number): void {
    if (this.#steeringSeq === undefined || seq > this.#steeringSeq) this.#steeringSeq = seq
    for (const journal of this.#journals?.values() ?? []) journal.steeringConsumed(seq)
  }

  #requireStore(what: string): RunStore {
    if (this.#store === undefined) throw new ConfigError(`agent.${what}() needs a run store: createAgent({ store }).`)
    return this.#store
  }

  /**
   * Wires a created (or restored) actor to its result, signal and journal, and starts it. A restored
   * run's worker restarts the work of the state it was saved in (the machine's entry actions do not
   * run again on a restore).
   */
  #launch(
    actor: Actor<AgentMachine>,
    worker: RunWorker,
    runId: string,
    signal: AbortSignal | undefined,
    journal: RunJournal | undefined,
    restored: boolean,
  ): RunHandle<TOutput> {
    let stopWatchingSignal: (() => void) | undefined
    /** Set when the journal could not write: the run stops here, and `result` rejects with why. */
    let lost: unknown
    if (journal) {
      // Made in a local, then stored: V8 allocates a closure written straight into a property in
      // its old generation, where it keeps what it captured through young GCs (docs/benchmarks.md).
      const onLost = (error: unknown) => {
        lost = error
        actor.stop()
      }
      journal.onLost = onLost
      this.#journals?.set(runId, journal)
    }
    const result = new Promise<RunResult<TOutput>>((resolve, reject) => {
      const finish = () => {
        if (lost !== undefined) return reject(asError(lost))
        const output = actor.getSnapshot().output as AgentOutput | undefined
        // Stopped by `actor.stop()` before it finished: nothing to report but that.
        if (output === undefined) return reject(new RunCancelledError('the run was stopped before it finished'))
        const runResult = toRunResult(runId, output, this.#handoffFilters.get(runId))
        this.#handoffFilters.delete(runId)
        this.#budgetChecks.delete(runId)
        if (output.status === 'done') resolve(this.#withOutput(runResult))
        else reject(new RunFailedError(runResult))
      }
      actor.subscribe({
        ...(journal ? { next: (snapshot) => journal.observe(snapshot) } : {}),
        complete: () => {
          // The run has ended (or was stopped): the work in hand stops with it.
          worker.stop()
          if (!journal || lost !== undefined) return finish()
          // The result is handed back once the run's end is stored.
          journal.observe(actor.getSnapshot())
          journal.settled().then(finish, finish)
        },
        // A root actor without an error observer would crash the process (XState rethrows).
        error: (error) => {
          worker.stop()
          reject(asError(error))
        },
      })
    }).finally(() => {
      this.#active.delete(runId)
      this.#budgetChecks.delete(runId)
      if (journal) {
        journal.close()
        this.#journals?.delete(runId)
      }
      stopWatchingSignal?.()
    })
    const handle: RunHandle<TOutput> = {
      runId,
      actor,
      result,
      steer: (text, steerOptions) => {
        assertSteeringText(text)
        actor.send({ type: 'agent.steer', text, from: steerOptions?.from ?? 'user' })
      },
      cancel: (reason, cancelOptions) =>
        actor.send({
          type: 'agent.cancel',
          reason: reason ?? 'cancelled by request',
          ...(cancelOptions?.by !== undefined ? { by: cancelOptions.by } : {}),
        }),
    }
    this.#active.set(runId, handle)
    journal?.attach(actor)
    actor.start()
    if (restored) resumeWait(worker, actor.getSnapshot())
    if (signal) {
      // One listener on a signal shared by many runs (see `whenAborted`), not one per run.
      stopWatchingSignal = whenAborted(signal, () =>
        handle.cancel(`signal aborted${signal.reason ? `: ${String(signal.reason)}` : ''}`),
      )
    }
    return handle
  }

  /**
   * Queues a correction for every active run (applied at its next tool call). With no run
   * in flight, it waits for the next run.
   */
  steer(text: string, options: { from?: string } = {}): void {
    assertSteeringText(text)
    if (this.#active.size === 0) {
      this.#queuedSteering.push({ text, from: options.from ?? 'user', at: this.#clock.now() })
      return
    }
    for (const handle of this.#active.values()) handle.steer(text, options)
  }

  /** Cancels every active run; their model calls and tools are aborted. */
  cancel(reason?: string): void {
    for (const handle of this.#active.values()) handle.cancel(reason)
  }

  /** The model the agent's provider calls. */
  get model(): string {
    return this.#options.provider.model
  }

  /** The agent's provider (telemetry reads its `providerName` and `baseURL`). */
  get provider(): Provider {
    return this.#options.provider
  }

  /** With an output schema, the answer as parsed (the machine already checked it fits). */
  #withOutput(result: RunResult): RunResult<TOutput> {
    if (!this.#output || result.stopReason !== 'final_answer') return result as RunResult<TOutput>
    const checked = this.#output.check(result.output)
    return { ...result, output: (checked.ok ? checked.value : result.output) as TOutput }
  }

  /** The names of the agent's tools. */
  get toolNames(): string[] {
    return this.#toolNames
  }

  /** The agent's tools, as given to `createAgent` or `setTools`. */
  get tools(): readonly Tool<any>[] {
    return this.#given
  }

  /**
   * Replaces the agent's tools (e.g. an MCP server's list changed). Runs in flight offer the new
   * list from their next model call; a call to a tool no longer there is an unknown tool.
   */
  setTools(tools: readonly Tool<any>[]): void {
    const next = this.#toolMap(tools)
    this.#tools.clear()
    for (const [name, tool] of next) this.#tools.set(name, tool)
    this.#parts.runtime.toolSpecs = [...next.values()].map(toToolSpec)
    this.#given = [...tools]
    this.#toolNames = [...next.keys()]
  }

  #toolMap(given: readonly Tool<any>[]): Map<string, Tool<unknown>> {
    const tools = new Map<string, Tool<unknown>>()
    for (const t of given) {
      assertToolName(t.name)
      if (tools.has(t.name)) throw new ConfigError(`Two tools are named "${t.name}".`)
      tools.set(t.name, this.#instruments.tool(t) as Tool<unknown>)
    }
    return tools
  }

  /** Runs in flight, by run id. */
  get runs(): ReadonlyMap<string, RunHandle<TOutput>> {
    return this.#active
  }
}

/**
 * Creates an agent: a model, its tools, and the hooks, reviewer and limits its runs obey.
 *
 * @example
 * ```ts
 * const agent = createAgent({
 *   provider: new OpenAIProvider({ baseURL: 'http://localhost:11434/v1', model: 'llama3.1' }),
 *   tools: [bookTicket],
 *   maxTurns: 10,
 *   reviewer: terminalReviewer(),
 * })
 * const result = await agent.run('Book me a seat to Mar del Plata on Friday.')
 * console.log(result.output)
 * ```
 */
export function createAgent<S extends Schema, T extends ToolList = ToolList, const Id extends string = string>(
  options: Omit<AgentOptions<T>, 'output' | 'id'> & { output: S; id?: Id },
): Agent<SchemaOutput<S>, Id>
export function createAgent<T extends ToolList = ToolList, const Id extends string = string>(
  options: Omit<AgentOptions<T>, 'id'> & { id?: Id },
): Agent<string, Id>
export function createAgent(options: AgentOptions): Agent<unknown> {
  return new Agent<unknown>(options)
}

function assertAgentId(id: string): void {
  // Agent ids become bus subject tokens.
  if (!isName(id)) throw new ConfigError(`Invalid agent id "${id}": use ${NAME_RULE}.`)
}

function assertSteeringText(text: string): void {
  if (typeof text !== 'string' || text.trim() === '') throw new ConfigError('A steering correction needs some text.')
}
