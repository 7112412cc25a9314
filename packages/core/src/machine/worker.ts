import { type AnyActorRef, fromCallback } from 'xstate'
import type { Work } from './actors.ts'
import type { AgentMachineEvent } from './context.ts'

type AnyActorSystem = AnyActorRef['system']

/**
 * The one long-lived actor of a run that does the work of its waits (issue 13: an invoked actor
 * per wait cost XState a child's creation, start, stop and two snapshot copies each time).
 *
 * Each wait state's entry asks the worker to start that state's work (`start`), its exit stops it
 * (`stop`): the work's `AbortSignal` aborts exactly when the state is left, as an invoked actor's
 * did (cancellation, steering, deadlines). The work answers with events: `work.done` /
 * `work.error` (the payloads an invoked actor's done and error events carried: `output`,
 * `error`), or its own (`approval.decision`, `deadline.reached`, ...). An answer of work that was
 * stopped is dropped.
 */
export class RunWorker {
  readonly #send: (event: AgentMachineEvent) => void
  readonly #system: AnyActorSystem
  /** The work of the state the run is in (one, or two: an approval and its deadline). */
  readonly #jobs: (PromiseJob | CallbackJob)[] = []

  constructor(send: (event: AgentMachineEvent) => void, system: AnyActorSystem) {
    this.#send = send
    this.#system = system
  }

  start(work: Work, input: unknown): void {
    if (work.kind === 'callback') {
      this.#jobs.push({ kind: 'callback', stop: work.run({ input, sendBack: this.#send, system: this.#system }) })
      return
    }
    const job = new PromiseJob(input, this.#system)
    const send = this.#send
    let pending: Promise<unknown>
    try {
      pending = work.run(job)
    } catch (error) {
      pending = Promise.reject(error)
    }
    pending.then(
      (output) => {
        job.settled = true
        if (!job.aborted) send({ type: 'work.done', output })
      },
      (error: unknown) => {
        job.settled = true
        if (!job.aborted) send({ type: 'work.error', error })
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
  readonly system: AnyActorSystem
  settled = false
  /** Stopped while running: its signal is (or, once read, will be) aborted; its answer dropped. */
  aborted = false
  /** Why it was stopped (a cancel), when something says. */
  #reason: unknown = undefined
  #controller: AbortController | undefined = undefined

  constructor(input: unknown, system: AnyActorSystem) {
    this.input = input
    this.system = system
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

  abort(reason?: unknown): void {
    this.aborted = true
    this.#reason = reason
    this.#controller?.abort(reason)
  }
}

const workers = new WeakMap<AnyActorSystem, RunWorker>()

/** The worker of the run whose actor system this is. */
export function workerOf(system: AnyActorSystem): RunWorker | undefined {
  return workers.get(system)
}

/**
 * The worker as an actor invoked by the machine's root for the whole run: stopping the run (or
 * its end) stops the work in hand. `onStart` restarts the work of a restored run's state.
 */
export function workerActor(onStart: (worker: RunWorker, parent: AnyActorRef) => void) {
  return fromCallback<AgentMachineEvent>(({ sendBack, system, self }) => {
    const worker = new RunWorker(sendBack, system)
    workers.set(system, worker)
    const parent = self._parent
    if (parent) onStart(worker, parent)
    return () => worker.stop()
  })
}
