import { Kvm } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import { type MessageBody, openMessage } from '@signalbox/core/internal'
import { DirectoryEntryMessage, decodeMessage, encodeMessage } from '@signalbox/core/protocol'

export type DirectoryEntry = MessageBody<DirectoryEntryMessage>

export type DirectoryChange = { op: 'put'; entry: DirectoryEntry } | { op: 'delete'; agentId: string; hostId: string }

/**
 * Who serves which agent. Hosts announce their agents (and refresh them); anyone can list or
 * watch. Addressing does not depend on it (a run request reaches any host of the agent through
 * its queue group): it is for discovery and for `signalbox agents`.
 */
export interface Directory {
  announce(entry: DirectoryEntry): Promise<void>
  withdraw(agentId: string, hostId: string): Promise<void>
  list(): Promise<DirectoryEntry[]>
  watch(onChange: (change: DirectoryChange) => void, signal: AbortSignal): Promise<void>
}

/** `<agent>.<host>`; a host id may hold characters a KV key cannot (they become `_`). */
const keyOf = (agentId: string, hostId: string) => `${agentId}.${hostId.replace(/[^-/_=.a-zA-Z0-9]/g, '_')}`
/** Agent ids have no `.`: the first one splits the key (a host name may have several). */
function splitKey(key: string): { agentId: string; hostId: string } {
  const dot = key.indexOf('.')
  return dot < 0 ? { agentId: key, hostId: '' } : { agentId: key.slice(0, dot), hostId: key.slice(dot + 1) }
}

/** The directory of one process (the embedded default). */
export class MemoryDirectory implements Directory {
  readonly #entries = new Map<string, DirectoryEntry>()
  readonly #watchers = new Set<(change: DirectoryChange) => void>()

  async announce(entry: DirectoryEntry): Promise<void> {
    this.#entries.set(keyOf(entry.agentId, entry.hostId), entry)
    for (const watcher of this.#watchers) watcher({ op: 'put', entry })
  }

  async withdraw(agentId: string, hostId: string): Promise<void> {
    if (this.#entries.delete(keyOf(agentId, hostId))) {
      for (const watcher of this.#watchers) watcher({ op: 'delete', agentId, hostId })
    }
  }

  async list(): Promise<DirectoryEntry[]> {
    return [...this.#entries.values()]
  }

  async watch(onChange: (change: DirectoryChange) => void, signal: AbortSignal): Promise<void> {
    for (const entry of this.#entries.values()) onChange({ op: 'put', entry })
    this.#watchers.add(onChange)
    signal.addEventListener('abort', () => this.#watchers.delete(onChange), { once: true })
  }
}

/**
 * The directory in a NATS KV bucket, one key per `<agent>.<host>`. The bucket's max age makes
 * an entry whose host stopped refreshing disappear (server 2.9 has no per-key TTL).
 */
export class KvDirectory implements Directory {
  readonly #connection: NatsConnection
  readonly #bucket: string
  readonly #ttlMs: number
  readonly #replicas: number
  #kv: ReturnType<Kvm['create']> | undefined

  /** `replicas`: copies of the bucket when this host creates it on a JetStream cluster (1, 3 or 5; default 1). */
  constructor(connection: NatsConnection, options: { bucket?: string; ttlMs?: number; replicas?: 1 | 3 | 5 } = {}) {
    this.#connection = connection
    this.#bucket = options.bucket ?? 'signalbox_directory'
    this.#ttlMs = options.ttlMs ?? 60_000
    this.#replicas = options.replicas ?? 1
  }

  #open() {
    this.#kv ??= new Kvm(this.#connection).create(this.#bucket, { ttl: this.#ttlMs, history: 1, replicas: this.#replicas })
    return this.#kv
  }

  async announce(entry: DirectoryEntry): Promise<void> {
    const kv = await this.#open()
    await kv.put(keyOf(entry.agentId, entry.hostId), encodeMessage({ v: 1, type: 'directory.entry', ...entry }))
  }

  async withdraw(agentId: string, hostId: string): Promise<void> {
    const kv = await this.#open()
    await kv.delete(keyOf(agentId, hostId))
  }

  async list(): Promise<DirectoryEntry[]> {
    const kv = await this.#open()
    const entries: DirectoryEntry[] = []
    const keys = await kv.keys()
    for await (const key of keys) {
      const value = await kv.get(key)
      if (value?.operation !== 'PUT') continue
      const decoded = decodeMessage(value.value, DirectoryEntryMessage)
      if (decoded.ok) {
        entries.push(openMessage(decoded.value).body)
      }
    }
    return entries
  }

  async watch(onChange: (change: DirectoryChange) => void, signal: AbortSignal): Promise<void> {
    const kv = await this.#open()
    const watcher = await kv.watch()
    signal.addEventListener('abort', () => watcher.stop(), { once: true })
    void (async () => {
      for await (const update of watcher) {
        const { agentId, hostId } = splitKey(update.key)
        if (update.operation !== 'PUT') {
          onChange({ op: 'delete', agentId, hostId })
          continue
        }
        const decoded = decodeMessage(update.value, DirectoryEntryMessage)
        if (decoded.ok) {
          onChange({ op: 'put', entry: openMessage(decoded.value).body })
        }
      }
    })().catch(() => {})
  }
}
