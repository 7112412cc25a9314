import { CheckpointError } from './errors.ts'

/**
 * The file store's per-run log: one append-only file holding the run's checkpoints and its
 * message batches, one record a line, after a first line naming the format:
 *
 *   signalbox-run-log 1
 *   C <revision> <writer> <bytes> <checkpoint JSON>
 *   M <bytes> <message batch JSON>
 *
 * `<bytes>` is the payload's length in bytes: a record shorter (or longer) than it says is a write
 * that never completed (a process killed mid-append, a power loss before its fsync): it is skipped
 * wherever it is. JSON never holds a raw newline, so a line is always one record.
 *
 * Revisions form a chain: a checkpoint record counts only if its revision is one more than the
 * last one counted (the log's first, written with the file, starts the chain: 1 for a new run, the
 * next revision for a run moved from the first layout); the first such record in the file wins. Appends are atomic and ordered by the
 * kernel (`O_APPEND`), so of two writers appending revision n+1 exactly one is first: the other's
 * record is skipped by every reader, and the writer learns it lost by reading the log back
 * (`writer` identifies its record). That is the compare-and-set, with no lock and no file per
 * revision.
 */
export const RUN_LOG_FORMAT = 1
export const RUN_LOG_HEADER = `signalbox-run-log ${RUN_LOG_FORMAT}\n`
const HEADER_BYTES = Buffer.from(RUN_LOG_HEADER)
const NEWLINE = 0x0a
const SPACE = 0x20

/** What a scan of the log found so far; a later scan goes on from `scanned`. */
export interface LogChain {
  /** The chain's revision: 0 until the first checkpoint record. */
  revision: number
  /** Where the payload of the chain's newest checkpoint is, in the file. */
  latest: { offset: number; length: number; writer: string } | undefined
  /**
   * File offset up to which whole lines were read. A file longer than that ends in an unterminated
   * line (a torn write, or one still in progress): an append then starts with a newline.
   */
  scanned: number
}

export const emptyChain = (): LogChain => ({ revision: 0, latest: undefined, scanned: 0 })

/** A checkpoint record, and where its payload starts in it. */
export function checkpointRecord(revision: number, writer: string, json: string): { bytes: Buffer; payload: number } {
  const payload = Buffer.from(json, 'utf8')
  const header = Buffer.from(`C ${revision} ${writer} ${payload.byteLength} `)
  return { bytes: Buffer.concat([header, payload, Buffer.from('\n')]), payload: header.byteLength }
}

export function messagesRecord(json: string): Buffer {
  const payload = Buffer.from(json, 'utf8')
  return Buffer.concat([Buffer.from(`M ${payload.byteLength} `), payload, Buffer.from('\n')])
}

/**
 * Reads the whole lines of `bytes` (the file's content from `chain.scanned`) into `chain`.
 * `onBatch` gets each complete message-batch payload; `onCheckpoint` each checkpoint record the
 * chain counts. The format line is checked when the scan starts at the file's beginning.
 */
export function scanLog(
  runId: string,
  bytes: Buffer,
  chain: LogChain,
  visit: { onBatch?(payload: Buffer): void; onCheckpoint?(writer: string): void } = {},
): LogChain {
  const base = chain.scanned
  let { revision, latest } = chain
  let pos = 0
  if (base === 0) {
    const end = bytes.indexOf(NEWLINE)
    if (end < 0) return { ...chain }
    if (!bytes.subarray(0, end + 1).equals(HEADER_BYTES)) {
      const shown = bytes.subarray(0, Math.min(end, 60)).toString('utf8')
      const known = shown.startsWith('signalbox-run-log ')
      throw new CheckpointError(
        known ? 'CHECKPOINT_UNSUPPORTED_VERSION' : 'CHECKPOINT_INVALID',
        runId,
        known
          ? `the run log is in format "${shown}"; this signalbox reads format ${RUN_LOG_FORMAT}.`
          : `the run log does not start with "${RUN_LOG_HEADER.trim()}".`,
      )
    }
    pos = end + 1
  }
  let lineStart = pos
  for (;;) {
    const end = bytes.indexOf(NEWLINE, lineStart)
    if (end < 0) break
    const record = parseRecord(bytes, lineStart, end)
    if (record?.kind === 'M') visit.onBatch?.(bytes.subarray(record.payload, end))
    else if (record?.kind === 'C' && (record.revision === revision + 1 || (revision === 0 && record.revision > 0))) {
      revision = record.revision
      latest = { offset: base + record.payload, length: end - record.payload, writer: record.writer }
      visit.onCheckpoint?.(record.writer)
    }
    lineStart = end + 1
  }
  return { revision, latest, scanned: base + lineStart }
}

type ParsedRecord = { kind: 'M'; payload: number } | { kind: 'C'; revision: number; writer: string; payload: number }

/** The record on `bytes[start, end)`, or undefined for a line that is not a whole record (a torn write). */
function parseRecord(bytes: Buffer, start: number, end: number): ParsedRecord | undefined {
  if (end - start < 4 || bytes[start + 1] !== SPACE) return undefined
  const kind = bytes[start]
  if (kind === 0x4d /* M */) {
    const size = readNumber(bytes, start + 2, end)
    if (size === undefined || end - size.next !== size.value) return undefined
    return { kind: 'M', payload: size.next }
  }
  if (kind !== 0x43 /* C */) return undefined
  const revision = readNumber(bytes, start + 2, end)
  if (revision === undefined) return undefined
  const writerEnd = bytes.indexOf(SPACE, revision.next)
  if (writerEnd < 0 || writerEnd >= end || writerEnd === revision.next) return undefined
  const size = readNumber(bytes, writerEnd + 1, end)
  if (size === undefined || end - size.next !== size.value) return undefined
  return {
    kind: 'C',
    revision: revision.value,
    writer: bytes.toString('latin1', revision.next, writerEnd),
    payload: size.next,
  }
}

/** Decimal digits at `at` followed by one space: the number and where the next field starts. */
function readNumber(bytes: Buffer, at: number, end: number): { value: number; next: number } | undefined {
  let value = 0
  let i = at
  for (; i < end && i - at < 15; i++) {
    const c = bytes[i] as number
    if (c === SPACE) break
    if (c < 0x30 || c > 0x39) return undefined
    value = value * 10 + (c - 0x30)
  }
  if (i === at || i >= end || bytes[i] !== SPACE) return undefined
  return { value, next: i + 1 }
}
