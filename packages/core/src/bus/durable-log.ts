/**
 * The in-process durable log: one append-only log shared by all subjects (like one JetStream
 * stream), with `msgId` de-duplication inside a window and a bounded length.
 */
import type { BusHeaders } from './bus.ts'

const MSG_ID_HEADER = 'Nats-Msg-Id'

export interface LogEntry {
  readonly seq: number
  readonly subject: string
  readonly data: Uint8Array
  readonly headers: BusHeaders
  /** Epoch ms of the append. */
  readonly storedAt: number
  tokens: string[] | undefined
}

export class DurableLog {
  readonly #entries: LogEntry[] = []
  readonly #duplicateWindowMs: number
  readonly #maxMessages: number
  #firstSeq = 1
  #lastSeq = 0
  readonly #dedup = new Map<string, { seq: number; expiresAt: number }>()

  constructor(duplicateWindowMs: number, maxMessages: number) {
    this.#duplicateWindowMs = duplicateWindowMs
    this.#maxMessages = maxMessages
  }

  /** Sequence of the oldest entry still kept. */
  get firstSeq(): number {
    return this.#firstSeq
  }

  get lastSeq(): number {
    return this.#lastSeq
  }

  /** The entry at `seq`, which must lie between `firstSeq` and `lastSeq`. */
  at(seq: number): LogEntry {
    return this.#entries[seq - this.#firstSeq] as LogEntry
  }

  /** The sequence an earlier append with this `msgId` got, if still inside the window at `now`. */
  duplicateOf(msgId: string, now: number): number | undefined {
    // Entries expire in insertion order (constant window), so pruning stops at the first live one.
    for (const [id, record] of this.#dedup) {
      if (record.expiresAt > now) break
      this.#dedup.delete(id)
    }
    return this.#dedup.get(msgId)?.seq
  }

  /** The newest entry still kept on `subject`, if any. */
  lastOn(subject: string): LogEntry | undefined {
    for (let i = this.#entries.length - 1; i >= 0; i--) {
      const entry = this.#entries[i] as LogEntry
      if (entry.subject === subject) return entry
    }
    return undefined
  }

  append(subject: string, data: Uint8Array, headers: BusHeaders | undefined, msgId: string, now: number): LogEntry {
    const seq = ++this.#lastSeq
    // The msgId travels as NATS's header so consumers see the same thing on both transports.
    const entry: LogEntry = {
      seq,
      subject,
      data,
      headers: Object.freeze({ ...headers, [MSG_ID_HEADER]: msgId }),
      storedAt: now,
      tokens: undefined,
    }
    this.#entries.push(entry)
    this.#dedup.set(msgId, { seq, expiresAt: now + this.#duplicateWindowMs })
    this.#trim()
    return entry
  }

  #trim(): void {
    const max = this.#maxMessages
    // Trim in batches so a full log does not cost an O(n) splice on every publish.
    if (this.#entries.length <= max + Math.max(1, max >> 4)) return
    const drop = this.#entries.length - max
    this.#entries.splice(0, drop)
    this.#firstSeq += drop
  }
}
