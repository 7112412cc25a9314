import { AbortedError, type SerializedError } from '@signalbox/core'
import { serializeError } from '@signalbox/core/internal'

export type FanOutResult<T> = { ok: true; value: T } | { ok: false; error: SerializedError }

/**
 * Runs `tasks` with at most `concurrency` in flight. Results come back in the tasks' order;
 * one task's failure is kept in its own slot and never stops the others.
 */
export async function fanOut<I, T>(
  inputs: readonly I[],
  run: (input: I, index: number, signal: AbortSignal) => Promise<T>,
  options: { concurrency?: number; signal?: AbortSignal } = {},
): Promise<FanOutResult<T>[]> {
  const concurrency = Math.max(1, Math.floor(options.concurrency ?? 4))
  const results: FanOutResult<T>[] = new Array(inputs.length)
  const signal = options.signal ?? new AbortController().signal
  let next = 0
  const worker = async () => {
    while (next < inputs.length) {
      const index = next++
      if (signal.aborted) {
        results[index] = {
          ok: false,
          error: serializeError(new AbortedError('The fan-out was cancelled before this task started.')),
        }
        continue
      }
      try {
        results[index] = { ok: true, value: await run(inputs[index] as I, index, signal) }
      } catch (error) {
        results[index] = { ok: false, error: serializeError(error) }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, inputs.length) }, worker))
  return results
}
