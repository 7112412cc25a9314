/** Small facts about KV writes the run store relies on. */
import { JetStreamApiCodes, JetStreamApiError, type JetStreamManager } from '@nats-io/jetstream'
import type { KV, KvEntry } from '@nats-io/kv'

/** The server refused a compare-and-set: the key is not at the expected revision. */
export function isWrongLastSequence(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  )
}

/** Whether a stored value is byte for byte the one a writer sent (a checkpoint carries its writer's lease and time). */
export function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength))
}

/** Gets in flight at once while reading many keys. */
const CONCURRENT_GETS = 32

/**
 * The current value of every key under `filter` (`run.*`, `log.<run>.>`), in write order, read
 * from the stream leader: the keys from the stream's subject counts (one request), then a get per
 * key, 32 at a time. Not through a consumer: a new consumer may be placed on a replica that lags
 * (a stale transcript would read as a gap) or on a node that is gone (it is never created).
 */
export async function latestEntries(
  kv: KV,
  jsm: JetStreamManager,
  bucket: string,
  filter: string,
  signal: AbortSignal,
): Promise<KvEntry[]> {
  const prefix = `$KV.${bucket}.`
  const info = await jsm.streams.info(`KV_${bucket}`, { subjects_filter: `${prefix}${filter}` })
  const keys = Object.keys(info.state.subjects ?? {}).map((subject) => subject.slice(prefix.length))
  const entries: KvEntry[] = []
  for (let i = 0; i < keys.length; i += CONCURRENT_GETS) {
    signal.throwIfAborted()
    const batch = await Promise.all(keys.slice(i, i + CONCURRENT_GETS).map((key) => kv.get(key)))
    for (const entry of batch) if (entry !== null && entry.operation === 'PUT') entries.push(entry)
  }
  return entries.sort((a, b) => a.revision - b.revision)
}
