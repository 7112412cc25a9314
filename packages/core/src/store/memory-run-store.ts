import { type Clock, systemClock } from '../clock.ts'
import type { Message } from '../messages.ts'
import type { Checkpoint, StoredRun } from './checkpoint.ts'
import { decodeCheckpoint, encodeCheckpoint } from './codec.ts'
import { CheckpointError, RunStoreError } from './errors.ts'
import { type AppendMessagesOptions, assembleTranscript, type MessageBatch } from './message-log.ts'
import {
  type ClaimOptions,
  claimRun,
  type ListRunsOptions,
  matchesListing,
  type RunListing,
  type RunStore,
  runKey,
} from './run-store.ts'

/**
 * The runs of one process, in memory: what an agent without a store keeps, and the reference the
 * conformance suite checks the durable stores against. Checkpoints are stored encoded, so a caller
 * never shares (or mutates) the stored object.
 */
export class MemoryRunStore implements RunStore {
  readonly #runs = new Map<string, { runId: string; data: string; revision: number; log: MessageBatch[] }>()
  readonly #clock: Clock

  constructor(options: { clock?: Clock } = {}) {
    this.#clock = options.clock ?? systemClock
  }

  async create(checkpoint: Checkpoint, options: { signal: AbortSignal }): Promise<number> {
    options.signal.throwIfAborted()
    const key = runKey(checkpoint.runId)
    if (this.#runs.has(key))
      throw new RunStoreError('RUN_REVISION_CONFLICT', checkpoint.runId, 'the run already exists.', { expected: 0 })
    this.#runs.set(key, { runId: checkpoint.runId, data: encodeCheckpoint(checkpoint), revision: 1, log: [] })
    return 1
  }

  async save(checkpoint: Checkpoint, options: { revision: number; signal: AbortSignal }): Promise<number> {
    options.signal.throwIfAborted()
    const run = this.#runs.get(runKey(checkpoint.runId))
    if (run === undefined) throw new RunStoreError('RUN_NOT_FOUND', checkpoint.runId, 'no checkpoint is stored for this run.')
    if (run.revision !== options.revision) {
      throw new RunStoreError(
        'RUN_REVISION_CONFLICT',
        checkpoint.runId,
        `expected revision ${options.revision}, found ${run.revision}.`,
        {
          expected: options.revision,
          actual: run.revision,
        },
      )
    }
    run.data = encodeCheckpoint(checkpoint)
    run.revision += 1
    return run.revision
  }

  async load(runId: string, options: { signal: AbortSignal }): Promise<StoredRun | undefined> {
    options.signal.throwIfAborted()
    const run = this.#runs.get(runKey(runId))
    return run && { checkpoint: decodeCheckpoint(runId, run.data), revision: run.revision }
  }

  async list(options: ListRunsOptions): Promise<RunListing> {
    options.signal.throwIfAborted()
    const listing: RunListing = { runs: [], errors: [] }
    for (const run of this.#runs.values()) {
      try {
        const checkpoint = decodeCheckpoint(run.runId, run.data)
        if (matchesListing(checkpoint, options)) listing.runs.push({ checkpoint, revision: run.revision })
      } catch (error) {
        if (!CheckpointError.is(error)) throw error
        listing.errors.push(error)
      }
    }
    return listing
  }

  claim(runId: string, options: ClaimOptions): Promise<StoredRun> {
    return claimRun(this, runId, { ...options, clock: this.#clock })
  }

  async appendMessages(runId: string, options: AppendMessagesOptions): Promise<void> {
    options.signal.throwIfAborted()
    const run = this.#runs.get(runKey(runId))
    if (run === undefined) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
    run.log.push(structuredClone({ from: options.from, epoch: options.epoch, messages: options.messages }))
  }

  async readMessages(runId: string, options: { length: number; signal: AbortSignal }): Promise<Message[]> {
    options.signal.throwIfAborted()
    const run = this.#runs.get(runKey(runId))
    if (run === undefined) throw new RunStoreError('RUN_NOT_FOUND', runId, 'no checkpoint is stored for this run.')
    return structuredClone(assembleTranscript(runId, run.log, options.length))
  }

  async delete(runId: string, options: { signal: AbortSignal }): Promise<void> {
    options.signal.throwIfAborted()
    this.#runs.delete(runKey(runId))
  }
}
