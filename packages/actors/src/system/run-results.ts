/**
 * The results of the remote runs started through one bus, read through one consumer of every
 * `runs.*.result` (named `<user>_results` under least privilege) and handed to the run that waits
 * for each. One consumer per run would need a consumer name per run, which no permission can pin
 * (a name is one token): with the shared one, a parent's user is granted exactly one consumer.
 */
import type { Bus, Subjects, Subscription } from '@signalbox/core/bus'
import { decodeMessage, RunResultMessage } from '@signalbox/core/protocol'

interface Waiter {
  resolve(result: RunResultMessage): void
}

export interface ResultWait {
  /** The result of the run (never rejects: the caller races it with its own cancellation). */
  readonly result: Promise<RunResultMessage>
  /** Stops waiting (the run ended or was abandoned). */
  stop(): void
}

class RunResults {
  readonly #waiters = new Map<string, Waiter>()
  readonly #subscription: Subscription

  constructor(bus: Bus, subjects: Subjects) {
    // Started before the first request is sent and kept while the bus lives: a result is never
    // published before this consumer exists (new results only: each run registers before asking).
    this.#subscription = bus.durableConsume(
      subjects.pattern('runResult'),
      (message) => {
        message.ack()
        const decoded = decodeMessage(message.data, RunResultMessage, { maxBytes: bus.maxPayload })
        if (!decoded.ok || message.subject !== subjects.runResult(decoded.value.runId)) return
        this.#waiters.get(decoded.value.runId)?.resolve(decoded.value)
      },
      { purpose: 'results' },
    )
  }

  get ready(): Promise<void> {
    return this.#subscription.ready
  }

  wait(runId: string): ResultWait {
    let resolve!: (result: RunResultMessage) => void
    const result = new Promise<RunResultMessage>((r) => {
      resolve = r
    })
    const waiter: Waiter = {
      resolve: (message) => {
        this.#waiters.delete(runId)
        resolve(message)
      },
    }
    this.#waiters.set(runId, waiter)
    return {
      result,
      stop: () => {
        if (this.#waiters.get(runId) === waiter) this.#waiters.delete(runId)
      },
    }
  }
}

const byBus = new WeakMap<Bus, Map<string, RunResults>>()

/**
 * Waits for the result of `runId`, through the bus's one results consumer (made at the first
 * remote run). Resolves once the consumer is live: only then may the run be requested.
 */
export async function waitForResult(bus: Bus, subjects: Subjects, runId: string): Promise<ResultWait> {
  let ofBus = byBus.get(bus)
  if (ofBus === undefined) {
    ofBus = new Map()
    byBus.set(bus, ofBus)
  }
  let results = ofBus.get(subjects.prefix)
  if (results === undefined) {
    results = new RunResults(bus, subjects)
    ofBus.set(subjects.prefix, results)
  }
  const wait = results.wait(runId)
  try {
    await results.ready
  } catch (error) {
    wait.stop()
    // Made again by the next run (the consumer could not be set up, e.g. the bus closed).
    if (ofBus.get(subjects.prefix) === results) ofBus.delete(subjects.prefix)
    throw error
  }
  return wait
}
