import { CheckpointError } from './errors.ts'

/**
 * The file store's run log: an append-only file holding a run's checkpoints and its message
 * batches, one record a line, after a first line naming the format:
 *
 *   signalbox-run-log 2
 *   C <revision> <writer> <bytes> <checkpoint JSON>
 *   M <bytes> <message batch JSON>
 *   S <revision> <writer> <bytes> <checkpoint JSON>
 *
 * `<bytes>` is the payload's length in bytes: a record shorter (or longer) than it says is a write
 * that never completed (a process killed mid-append, a power loss before its fsync): it is skipped
 * wherever it is. JSON never holds a raw newline, so a line is always one record.
 *
 * Revisions form a chain: a checkpoint record counts only if its revision is one more than the
 * last one counted (the log's first starts the chain); the first such record in the file wins.
 * Appends are atomic and ordered by the kernel (`O_APPEND`), so of two writers appending revision
 * n+1 exactly one is first: the other's record is skipped by every reader, and the writer learns
 * it lost by reading the log back (`writer` identifies its record). That is the compare-and-set,
 * with no lock and no file per revision.
 *
 * `S` (seal) is a checkpoint that also closes the log: it counts like `C`, and nothing after it in
 * the file counts. The run goes on in the next log (`run-dir.ts`), which starts with that same
 * checkpoint: a log is compacted by sealing it, never by rewriting it, so a writer still appending
 * to it can only lose (its record comes after the seal), never be lost unnoticed.
 */
export const RUN_LOG_FORMAT = 2
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
  /** Checkpoint records counted (what compaction is decided on). */
  checkpoints: number
  /** The chain's newest checkpoint is a seal: the log is closed, the run goes on in the next one. */
  sealed: boolean
  /**
   * File offset up to which whole lines were read. A file longer than that ends in an unterminated
   * line (a torn write, or one still in progress): an append then starts with a newline.
   */
  scanned: number
}

export const emptyChain = (): LogChain => ({ revision: 0, latest: undefined, checkpoints: 0, sealed: false, scanned: 0 })

/** A checkpoint record (`seal`: one that closes the log), and where its payload starts in it. */
export function checkpointRecord(
  revision: number,
  writer: string,
  json: string | Buffer,
  seal = false,
): { bytes: Buffer; payload: number } {
  const payload = typeof json === 'string' ? Buffer.from(json, 'utf8') : json
  const header = Buffer.from(`${seal ? 'S' : 'C'} ${revision} ${writer} ${payload.byteLength} `)
  return { bytes: Buffer.concat([header, payload, Buffer.from('\n')]), payload: header.byteLength }
}

export function messagesRecord(json: string | Buffer): Buffer {
  const payload = typeof json === 'string' ? Buffer.from(json, 'utf8') : json
  return Buffer.concat([Buffer.from(`M ${payload.byteLength} `), payload, Buffer.from('\n')])
}

export interface LogVisitor {
  /** Each complete message-batch payload before the seal (if any), with its whole line's bytes. */
  onBatch?(payload: Buffer, line: Buffer): void
  /** Each checkpoint record the chain counts. */
  onCheckpoint?(writer: string): void
}

/**
 * Reads the whole lines of `bytes` (the file's content from `chain.scanned`) into `chain`. The
 * format line is checked when the scan starts at the file's beginning. After a seal, lines are
 * read past but count for nothing.
 */
export function scanLog(runId: string, bytes: Buffer, chain: LogChain, visit: LogVisitor = {}): LogChain {
  const base = chain.scanned
  let { revision, latest, checkpoints, sealed } = chain
  let pos = 0
  if (base === 0) {
    const end = bytes.indexOf(NEWLINE)
    if (end < 0) return { ...chain }
    checkHeader(runId, bytes.subarray(0, end + 1))
    pos = end + 1
  }
  let lineStart = pos
  for (;;) {
    const end = bytes.indexOf(NEWLINE, lineStart)
    if (end < 0) break
    if (!sealed) {
      const record = parseRecord(bytes, lineStart, end)
      if (record?.kind === 'M') visit.onBatch?.(bytes.subarray(record.payload, end), bytes.subarray(lineStart, end + 1))
      else if (record?.kind === 'C' && (record.revision === revision + 1 || (revision === 0 && record.revision > 0))) {
        revision = record.revision
        latest = { offset: base + record.payload, length: end - record.payload, writer: record.writer }
        checkpoints++
        sealed = record.seal
        visit.onCheckpoint?.(record.writer)
      }
    }
    lineStart = end + 1
  }
  return { revision, latest, checkpoints, sealed, scanned: base + lineStart }
}

function checkHeader(runId: string, line: Buffer): void {
  if (line.equals(HEADER_BYTES)) return
  const shown = line.subarray(0, Math.min(line.byteLength - 1, 60)).toString('utf8')
  const known = shown.startsWith('signalbox-run-log ')
  throw new CheckpointError(
    known ? 'CHECKPOINT_UNSUPPORTED_VERSION' : 'CHECKPOINT_INVALID',
    runId,
    known
      ? `the run log is in format "${shown}"; this signalbox reads format ${RUN_LOG_FORMAT}.`
      : `the run log does not start with "${RUN_LOG_HEADER.trim()}".`,
    { details: known ? { format: shown.slice('signalbox-run-log '.length), supported: RUN_LOG_FORMAT } : {} },
  )
}

type ParsedRecord =
  | { kind: 'M'; payload: number }
  | { kind: 'C'; seal: boolean; revision: number; writer: string; payload: number }

/** The record on `bytes[start, end)`, or undefined for a line that is not a whole record (a torn write). */
function parseRecord(bytes: Buffer, start: number, end: number): ParsedRecord | undefined {
  if (end - start < 4 || bytes[start + 1] !== SPACE) return undefined
  const kind = bytes[start]
  if (kind === 0x4d /* M */) {
    const size = readNumber(bytes, start + 2, end)
    if (size === undefined || end - size.next !== size.value) return undefined
    return { kind: 'M', payload: size.next }
  }
  if (kind !== 0x43 /* C */ && kind !== 0x53 /* S */) return undefined
  const revision = readNumber(bytes, start + 2, end)
  if (revision === undefined) return undefined
  const writerEnd = bytes.indexOf(SPACE, revision.next)
  if (writerEnd < 0 || writerEnd >= end || writerEnd === revision.next) return undefined
  const size = readNumber(bytes, writerEnd + 1, end)
  if (size === undefined || end - size.next !== size.value) return undefined
  return {
    kind: 'C',
    seal: kind === 0x53,
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
