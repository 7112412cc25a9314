import { ErrorCode, SignalboxError } from './errors.ts'
import type { AgentEvent, AgentEventType, EventListener } from './events.ts'

/** The last item of a run's stream: the run finished with its answer. */
export interface StreamResult<R> {
  type: 'result'
  result: R
}

export type StreamItem<R> = AgentEvent | StreamResult<R>

/**
 * One run's events as an async iterable, ending with `{ type: 'result', result }`. A failed or
 * cancelled run ends the loop by throwing its `RunFailedError` (after its `run.end` event).
 * Leaving the loop early (`break`, `return`, a throw) cancels the run.
 */
export interface RunStream<R> extends AsyncIterable<StreamItem<R>> {
  readonly runId: string
  /** The run's result, as `run()` gives it; settles whether or not anyone iterates. */
  readonly result: Promise<R>
  steer(text: string, options?: { from?: string }): void
  cancel(reason?: string): void
}

/** What `streamRun` needs of an agent: its events, and a way to start a run with a known id. */
export interface StreamSource<R> {
  on<T extends AgentEventType | '*'>(type: T, listener: EventListener<T>): () => void
  start(runId: string): {
    result: Promise<R>
    steer(text: string, options?: { from?: string }): void
    cancel(reason?: string): void
  }
}

/**
 * Starts a run and streams its events. The listener is attached before the run starts and keeps
 * only events of this run id, so nothing of this run is missed and nothing of another run leaks in.
 * Events wait in a queue until the caller reads them.
 */
export function streamRun<R>(source: StreamSource<R>, runId: string): RunStream<R> {
  const queue: StreamItem<R>[] = []
  let finished = false
  let failure: { error: unknown } | undefined
  let wake: (() => void) | undefined
  const notify = () => {
    const resume = wake
    wake = undefined
    resume?.()
  }

  const unsubscribe = source.on('*', (event) => {
    if (event.runId !== runId) return
    queue.push(event)
    notify()
  })
  let handle: ReturnType<StreamSource<R>['start']>
  try {
    handle = source.start(runId)
  } catch (error) {
    unsubscribe()
    throw error
  }
  handle.result.then(
    (result) => {
      queue.push({ type: 'result', result })
      finished = true
      unsubscribe()
      notify()
    },
    (error: unknown) => {
      failure = { error }
      finished = true
      unsubscribe()
      notify()
    },
  )

  let iterating = false
  return {
    runId,
    result: handle.result,
    steer: (text, options) => handle.steer(text, options),
    cancel: (reason) => handle.cancel(reason),
    [Symbol.asyncIterator](): AsyncIterator<StreamItem<R>> {
      if (iterating)
        throw new SignalboxError(ErrorCode.RUN_STREAM_CONSUMED, 'A run stream can be iterated once.', { fault: 'user' })
      iterating = true
      let closed = false
      const close = () => {
        closed = true
        queue.length = 0
        if (!finished) {
          // The result promise rejects with the cancellation; the caller asked for it, so it is no error.
          handle.result.catch(() => {})
          handle.cancel('the stream was closed by its reader')
        }
      }
      return {
        async next(): Promise<IteratorResult<StreamItem<R>>> {
          while (!closed) {
            const item = queue.shift()
            if (item) return { value: item, done: false }
            if (finished) {
              closed = true
              if (failure) throw failure.error
              break
            }
            await new Promise<void>((resolve) => {
              wake = resolve
            })
          }
          return { value: undefined, done: true }
        },
        async return(): Promise<IteratorResult<StreamItem<R>>> {
          close()
          return { value: undefined, done: true }
        },
        async throw(error?: unknown): Promise<IteratorResult<StreamItem<R>>> {
          close()
          throw error
        },
      }
    },
  }
}
