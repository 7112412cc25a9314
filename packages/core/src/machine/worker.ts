import type { Work } from './actors.ts'
import type { AgentMachineEvent } from './context.ts'
import type { AgentRuntime } from './runtime.ts'

/**
 * The object of a run that does the work of its waits: a plain object beside the run's actor, not
 * an actor of its own (an invoked actor per wait, and later one invoked worker per run, cost
 * XState a child actor with its snapshots and the run an actor system's worth of bookkeeping).
 *
 * Each wait state's entry asks the worker to start that state's work (`start`), its exit stops it
 * (`stop`): the work's `AbortSignal` aborts exactly when the state is left, as an invoked actor's
 * did (cancellation, steering, deadlines). The work answers with events: `work.done` /
 * `work.error` (the payloads an invoked actor's done and error events carried: `output`,
 * `error`, and how long the work ran: `elapsedMs`), or its own (`approval.decision`, `deadline.reached`, ...), sent to the run's actor. An
 * answer of work that was stopped is dropped. The run stops it when it ends (see `Agent`).
 */
export class RunWorker {
  readonly #send: (event: AgentMachineEvent) => void
  readonly #runtime: AgentRuntime
  /** The work of the state the run is in (one, or two: an approval and its deadline). */
  readonly #jobs: (PromiseJob | CallbackJob)[] = []

  constructor(send: (event: AgentMachineEvent) => void, runtime: AgentRuntime) {
    this.#send = send
    this.#runtime = runtime
  }

  /** Starts `work` for wait state `wait`; its answer names that state (`work.done`'s `wait`). */
  start(work: Work, input: unknown, wait: string): void {
    if (work.kind === 'callback') {
      this.#jobs.push({ kind: 'callback', stop: work.run({ input, sendBack: this.#send, runtime: this.#runtime }) })
      return
    }
    const job = new PromiseJob(input, this.#runtime)
    const send = this.#send
    const clock = this.#runtime.clock
    // How long the work ran (a tool's own run time, for tool.end): measured here, where the work
    // starts and answers, so the context needs no update to remember when it started.
    const startedAt = clock.now()
    let pending: Promise<unknown>
    try {
      pending = work.run(job)
    } catch (error) {
      pending = Promise.reject(error)
    }
    pending.then(
      (output) => {
        job.settled = true
        if (!job.aborted) send({ type: 'work.done', wait, output, elapsedMs: clock.now() - startedAt })
      },
      (error: unknown) => {
        job.settled = true
        if (!job.aborted) send({ type: 'work.error', wait, error, elapsedMs: clock.now() - startedAt })
      },
    )
    this.#jobs.push(job)
  }

  /**
   * Stops the current work: the signal of work still running aborts and its answer, if one comes,
   * is dropped. Work that has answered is not aborted (as an invoked actor that was done was not):
   * an abort makes Node build a `DOMException`, the costliest part of a wait.
   */
  stop(reason?: unknown): void {
    const jobs = this.#jobs
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i] as PromiseJob | CallbackJob
      if (job.kind === 'callback') job.stop(reason)
      else if (!job.settled) job.abort(reason)
    }
    jobs.length = 0
  }
}

interface CallbackJob {
  kind: 'callback'
  stop: (reason?: unknown) => void
}

/**
 * Promise work's arguments and state. Its `AbortSignal` is made the first time something reads
 * `signal` (a model call or a tool that passes it on; a hook that never looks at it costs none):
 * read after the work was stopped, it is already aborted, so the work sees what an eager signal
 * would have shown it.
 */
class PromiseJob {
  readonly kind = 'promise'
  readonly input: unknown
  readonly runtime: AgentRuntime
  settled = false
  /** Stopped while running: its signal is (or, once read, will be) aborted; its answer dropped. */
  aborted = false
  /** Why it was stopped (a cancel), when something says. */
  #reason: unknown = undefined
  #controller: AbortController | undefined = undefined
  /** Told of an abort without a signal (`onAbort`: see call-abort.ts). */
  #listeners: (() => void)[] | undefined = undefined

  constructor(input: unknown, runtime: AgentRuntime) {
    this.input = input
    this.runtime = runtime
  }

  get signal(): AbortSignal {
    let controller = this.#controller
    if (controller === undefined) {
      controller = new AbortController()
      this.#controller = controller
      if (this.aborted) controller.abort(this.#reason)
    }
    return controller.signal
  }

  onAbort(listener: () => void): () => void {
    if (this.aborted) {
      listener()
      return noop
    }
    if (this.#listeners === undefined) this.#listeners = []
    const listeners = this.#listeners
    listeners.push(listener)
    return () => {
      const at = listeners.indexOf(listener)
      if (at >= 0) listeners.splice(at, 1)
    }
  }

  abort(reason?: unknown): void {
    this.aborted = true
    this.#reason = reason
    this.#controller?.abort(reason)
    const listeners = this.#listeners
    this.#listeners = undefined
    if (listeners) for (const listener of listeners) listener()
  }
}

const noop = () => {}
