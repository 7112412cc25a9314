import { randomBytes } from 'node:crypto'
import { closeSync, fstatSync, linkSync, openSync, readdirSync, readSync, type Stats, unlinkSync, writeSync } from 'node:fs'
import path from 'node:path'
import { CheckpointError } from './errors.ts'
import { checkpointRecord, emptyChain, type LogChain, RUN_LOG_HEADER, scanLog } from './run-log.ts'

/**
 * A run's directory in the file store. The run lives in its newest log, `log.<n>` (format in
 * `run-log.ts`); `transcript.<n>` holds the message batches that `log.<n-1>` held when it was
 * compacted. Compacting (`compactLog`) seals `log.<n>` with a checkpoint, then publishes
 * `transcript.<n+1>` (the log's batches, as they were) and `log.<n+1>` (starting with that same
 * checkpoint), each written under a temp name and linked (`link` never replaces: of two processes
 * completing one seal, the first wins and the second finds its work done), then removes
 * `log.<n>`. So a load reads one short log however old the run is, and the transcript is read
 * from the transcript files and the newest log. Every step leaves a directory a reader can load:
 * a sealed log with no successor still holds the run's newest checkpoint, and the next writer
 * completes the seal.
 */
export const logName = (generation: number) => `log.${generation}`
export const transcriptName = (generation: number) => `transcript.${generation}`
const LOG = /^log\.(\d{1,15})$/
const TRANSCRIPT = /^transcript\.(\d{1,15})$/
/** What an older signalbox left in a run's directory. */
const OLDER_LAYOUTS = [/^run\.log$/, /^rev-\d+\.json$/, /^messages\.jsonl$/]

export interface RunDirFiles {
  /** Generations of the logs present, ascending. */
  logs: number[]
  /** Generations of the transcript files present, ascending. */
  transcripts: number[]
}

/** The files of a run's directory; undefined when it does not exist. Refuses a directory an older signalbox wrote. */
export function readRunDir(runId: string, dir: string): RunDirFiles | undefined {
  let entries: string[]
  try {
    entries = readdirSync(dir)
  } catch (error) {
    if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return undefined
    throw error
  }
  const files: RunDirFiles = { logs: [], transcripts: [] }
  let older: string | undefined
  for (const entry of entries) {
    const log = LOG.exec(entry)
    if (log) files.logs.push(Number(log[1]))
    const transcript = TRANSCRIPT.exec(entry)
    if (transcript) files.transcripts.push(Number(transcript[1]))
    if (OLDER_LAYOUTS.some((pattern) => pattern.test(entry))) older = entry
  }
  if (files.logs.length === 0 && older !== undefined) {
    throw new CheckpointError(
      'CHECKPOINT_UNSUPPORTED_VERSION',
      runId,
      `the run was stored by an older signalbox (its directory holds "${older}", run-log format 1 or earlier); this signalbox reads run-log format 2 with checkpoint version 2. Finish or delete the run with the signalbox that stored it.`,
      { details: { found: older } },
    )
  }
  files.logs.sort((a, b) => a - b)
  files.transcripts.sort((a, b) => a - b)
  return files
}

/**
 * Writes `content` as `dir/name` if no such file exists yet: under a temp name (synced when
 * `sync`), then linked. Resolves false when the file already existed (nothing written).
 */
export async function publishFile(
  dir: string,
  name: string,
  content: Buffer,
  sync: (fd: number) => Promise<void>,
): Promise<boolean> {
  const temp = path.join(dir, `.tmp-${randomBytes(8).toString('hex')}`)
  const fd = openSync(temp, 'wx')
  try {
    writeAll(fd, content)
    await sync(fd)
  } finally {
    closeSync(fd)
  }
  try {
    linkSync(temp, path.join(dir, name))
    return true
  } catch (error) {
    if (isCode(error, 'EEXIST')) return false
    throw error
  } finally {
    try {
      unlinkSync(temp)
    } catch {
      // A leftover temp file is harmless (never read).
    }
  }
}

/**
 * Completes the seal of `log.<generation>` (open as `fd`, scanned into `chain`, which is sealed):
 * publishes its batches as `transcript.<generation+1>` and its sealing checkpoint as the start of
 * `log.<generation+1>`, then removes the sealed log. Idempotent: whoever completes it first wins,
 * and a later call finds the files there.
 */
export async function completeSeal(
  runId: string,
  dir: string,
  generation: number,
  fd: number,
  chain: LogChain,
  sync: { file(fd: number): Promise<void>; dir(dir: string): Promise<void> },
): Promise<void> {
  const latest = chain.latest
  if (!chain.sealed || latest === undefined) throw new Error(`log ${generation} of run "${runId}" is not sealed`)
  const bytes = readRange(fd, 0, chain.scanned)
  const batches: Buffer[] = [Buffer.from(RUN_LOG_HEADER)]
  scanLog(runId, bytes, emptyChain(), { onBatch: (_payload, line) => batches.push(line) })
  if (batches.length > 1) await publishFile(dir, transcriptName(generation + 1), Buffer.concat(batches), sync.file)
  const seal = bytes.subarray(latest.offset, latest.offset + latest.length)
  const start = checkpointRecord(chain.revision, latest.writer, seal)
  await publishFile(dir, logName(generation + 1), Buffer.concat([Buffer.from(RUN_LOG_HEADER), start.bytes]), sync.file)
  await sync.dir(dir)
  try {
    unlinkSync(path.join(dir, logName(generation)))
  } catch (error) {
    if (!isCode(error, 'ENOENT')) throw error
  }
}

/**
 * Which file a log is: its inode and its birth time, so a run deleted and created anew by another
 * process is never taken for the log this process read (a freed inode number is soon reused).
 */
export function fileIdentity(stat: Stats): string {
  return `${stat.dev}:${stat.ino}:${stat.birthtimeMs}`
}

/** Opens a file (appending, by default); undefined when it does not exist. */
export function openIfExists(file: string, flags: number): number | undefined {
  try {
    return openSync(file, flags)
  } catch (error) {
    if (isCode(error, 'ENOENT') || isCode(error, 'ENOTDIR')) return undefined
    throw error
  }
}

/** `writeSync` until every byte is written. */
export function writeAll(fd: number, bytes: Buffer): void {
  for (let offset = 0; offset < bytes.byteLength; ) offset += writeSync(fd, bytes, offset)
}

/** The bytes of `[from, to)` (fewer if the file is shorter). */
export function readRange(fd: number, from: number, to: number): Buffer {
  const bytes = Buffer.allocUnsafe(Math.max(0, to - from))
  let read = 0
  while (read < bytes.byteLength) {
    const n = readSync(fd, bytes, read, bytes.byteLength - read, from + read)
    if (n === 0) break
    read += n
  }
  return read === bytes.byteLength ? bytes : bytes.subarray(0, read)
}

/** The whole content of an open file. */
export function readAll(fd: number): Buffer {
  return readRange(fd, 0, fstatSync(fd).size)
}

export function isCode(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code
}
