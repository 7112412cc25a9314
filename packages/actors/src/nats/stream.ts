/**
 * The JetStream stream behind the durable path: its name for a prefix, and creating it or
 * bringing an existing one up to our subjects and limits. Kept to what nats-server 2.9 supports.
 */
import {
  DiscardPolicy,
  JetStreamApiCodes,
  type JetStreamManager,
  RetentionPolicy,
  StorageType,
  type StreamInfo,
} from '@nats-io/jetstream'
import { nanos } from '@nats-io/transport-node'
import { DEFAULT_SUBJECT_PREFIX, DurableSubjectError, InvalidSubjectError } from '@signalbox/core/bus'
import { DEFAULT_DUPLICATE_WINDOW_MS, DURABLE_ONLY_REASON, subjectCovers, subjectMatches } from '@signalbox/core/internal'
import { isApiError } from './errors.ts'
import type { NatsDurableOptions, StreamWait } from './options.ts'

/** The stream name for a prefix: `SIGNALBOX` for the default one, so deployments with other prefixes never share (and rewrite) a stream. */
export function defaultStreamName(prefix: string): string {
  if (prefix === DEFAULT_SUBJECT_PREFIX) return 'SIGNALBOX'
  return `SIGNALBOX_${prefix.toUpperCase().replace(/[^A-Z0-9_-]/g, '_')}`
}

/** What the bus keeps of its stream: the subjects it captures and its replicas, as the server reports them. */
export interface StreamShape {
  subjects: string[]
  replicas: number
}

/**
 * JetStream's answers while a cluster forms (its nodes not all known to the meta leader yet: "no
 * suitable peers for placement") or elects ("JetStream system temporarily unavailable"): both pass
 * once the nodes have joined, so a host started with its cluster waits instead of failing.
 */
const CLUSTER_FORMING = [10005, 10008]

function clusterForming(error: unknown): boolean {
  return CLUSTER_FORMING.some((code) => isApiError(error, code))
}

/** `ensureStream`, waiting while the cluster forms (see `CLUSTER_FORMING`). */
export async function ensurePlacedStream(
  jsm: JetStreamManager,
  streamName: string,
  subjects: string[],
  durable: NatsDurableOptions,
  waiter: { pause(ms: number, signal: AbortSignal | undefined): Promise<void> },
  signal: AbortSignal | undefined,
): Promise<StreamShape> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await ensureStream(jsm, streamName, subjects, durable)
    } catch (error) {
      if (!clusterForming(error)) throw error
    }
    if (attempt === 0) durable.onWaitingForStream?.(streamName, 'placement')
    await waiter.pause(Math.min(2_000, 100 * 2 ** attempt), signal)
  }
}

/**
 * Creates the stream, or adds our subjects and limits to an existing one (other subjects are
 * kept). Returns the subjects the stream captures and its replicas, as the server reports them.
 */
export async function ensureStream(
  jsm: JetStreamManager,
  streamName: string,
  subjects: string[],
  durable: NatsDurableOptions,
): Promise<StreamShape> {
  const duplicateWindow = nanos(durable.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS)
  const maxAge = durable.maxAgeMs === undefined ? 0 : nanos(durable.maxAgeMs)
  const replicas = durable.replicas ?? 1
  let info: StreamInfo
  try {
    info = await jsm.streams.info(streamName)
  } catch (error) {
    if (!isApiError(error, JetStreamApiCodes.StreamNotFound)) throw error
    const created = await jsm.streams.add({
      name: streamName,
      subjects,
      storage: durable.storage === 'memory' ? StorageType.Memory : StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.Old,
      duplicate_window: duplicateWindow,
      max_age: maxAge,
      num_replicas: replicas,
      // Stored results are read back by subject (`durableLast`: a direct get a permission can name).
      allow_direct: true,
    })
    return { subjects: created.config.subjects ?? subjects, replicas: created.config.num_replicas ?? replicas }
  }
  const existing = info.config.subjects ?? []
  const missing = subjects.filter((subject) => !existing.some((p) => subjectCovers(p, subject)))
  // Replicas are only raised here: a deployment that asks for fewer (the default 1) keeps what an operator set.
  const numReplicas = Math.max(info.config.num_replicas ?? 1, replicas)
  if (
    missing.length === 0 &&
    info.config.duplicate_window === duplicateWindow &&
    info.config.max_age === maxAge &&
    (info.config.num_replicas ?? 1) === numReplicas &&
    info.config.allow_direct === true
  ) {
    return { subjects: existing, replicas: numReplicas }
  }
  const updated = await jsm.streams.update(streamName, {
    subjects: [...existing, ...missing],
    duplicate_window: duplicateWindow,
    max_age: maxAge,
    num_replicas: numReplicas,
    allow_direct: true,
  })
  return { subjects: updated.config.subjects ?? [...existing, ...missing], replicas: updated.config.num_replicas ?? numReplicas }
}

/**
 * For users that may not create or change the stream (least privilege): waits until it exists
 * (an agent creates it) and returns the subjects it captures and its replicas. Only `STREAM.INFO` is used.
 */
export async function awaitStream(
  jsm: JetStreamManager,
  streamName: string,
  waiter: { pause(ms: number, signal: AbortSignal | undefined): Promise<void> },
  signal: AbortSignal | undefined,
  onWaiting?: (streamName: string, why: StreamWait) => void,
): Promise<StreamShape> {
  for (let attempt = 0; ; attempt++) {
    try {
      const info = await jsm.streams.info(streamName)
      return { subjects: info.config.subjects ?? [], replicas: info.config.num_replicas ?? 1 }
    } catch (error) {
      if (!isApiError(error, JetStreamApiCodes.StreamNotFound) && !clusterForming(error)) throw error
    }
    if (attempt === 0) onWaiting?.(streamName, 'missing')
    await waiter.pause(Math.min(2_000, 100 * 2 ** attempt), signal)
  }
}

/** The subjects the stream captures, and the checks that keep plain and durable traffic apart. */
export class StreamSubjects {
  #subjects: string[]
  readonly #cache = new Map<string, boolean>()

  constructor(subjects: string[]) {
    this.#subjects = [...subjects]
  }

  get list(): readonly string[] {
    return this.#subjects
  }

  /** After stream setup: the subjects as the server reports them. */
  set(subjects: string[]): void {
    this.#subjects = subjects
    this.#cache.clear()
  }

  /** Whether a publish on `subject` lands in the stream. */
  captures(subject: string): boolean {
    let durable = this.#cache.get(subject)
    if (durable === undefined) {
      durable = this.#subjects.some((pattern) => subjectMatches(pattern, subject))
      // Bounded: subjects repeat, but ids in them make the set open-ended.
      if (this.#cache.size > 2_000) this.#cache.clear()
      this.#cache.set(subject, durable)
    }
    return durable
  }

  /** Durable calls must stay inside the stream's subjects. */
  assertCovers(subject: string): void {
    if (!this.#subjects.some((pattern) => subjectCovers(pattern, subject))) {
      throw new DurableSubjectError(subject, this.#subjects)
    }
  }

  /** Plain publish/request must stay outside them. */
  assertNotCaptured(subject: string): void {
    if (this.captures(subject)) throw new InvalidSubjectError(subject, DURABLE_ONLY_REASON)
  }
}
