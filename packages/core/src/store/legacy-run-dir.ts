import { closeSync, fstatSync, openSync, readSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import type { StoredRun } from './checkpoint.ts'
import { decodeCheckpoint } from './codec.ts'
import { type MessageBatch, parseBatch } from './message-log.ts'

/**
 * Runs stored by the file store's first layout: a file per revision (`rev-<n>.json`, older ones
 * emptied) and `messages.jsonl`. Read here so that runs stored before the run log still resume;
 * the first write to such a run moves it to the run log (`FileRunStore`), and nothing writes this
 * layout's checkpoints any more.
 */
const REVISION_FILE = /^rev-(\d{1,15})\.json$/
export const LEGACY_MESSAGES_FILE = 'messages.jsonl'

/** The newest checkpoint of a run in the first layout; undefined when the directory holds none. */
export async function loadLegacyRun(runId: string, dir: string, signal: AbortSignal): Promise<StoredRun | undefined> {
  const revisions = await listRevisions(dir)
  const revision = revisions.at(-1)
  if (revision === undefined) return undefined
  // An empty newest revision is one a power loss cut off (its name reached the disk, its data did
  // not): the newest revision with data is the run; the compare-and-set token stays the highest name.
  let data = Buffer.alloc(0)
  for (let i = revisions.length - 1; data.byteLength === 0 && i >= 0; i--) {
    data = await readFile(path.join(dir, `rev-${revisions[i]}.json`), { signal })
  }
  return { checkpoint: decodeCheckpoint(runId, data), revision }
}

/** The message batches of a run in the first layout, in write order (a torn last line skipped). */
export async function readLegacyBatches(runId: string, dir: string, signal: AbortSignal): Promise<MessageBatch[]> {
  let text = ''
  try {
    text = await readFile(path.join(dir, LEGACY_MESSAGES_FILE), { encoding: 'utf8', signal })
  } catch (error) {
    if ((error as { code?: unknown }).code !== 'ENOENT') throw error
  }
  const batches: MessageBatch[] = []
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    const batch = parseBatch(runId, line)
    if (batch !== undefined) batches.push(batch)
  }
  return batches
}

/** Whether the run directory holds a checkpoint of the first layout. */
export async function hasLegacyRevisions(dir: string): Promise<boolean> {
  return (await listRevisions(dir)).length > 0
}

/** Whether a file's last byte is a newline (or the file is empty or missing). */
export function endsWithNewline(file: string): boolean {
  let fd: number
  try {
    fd = openSync(file, 'r')
  } catch {
    return true
  }
  try {
    const { size } = fstatSync(fd)
    if (size === 0) return true
    const last = Buffer.alloc(1)
    readSync(fd, last, 0, 1, size - 1)
    return last[0] === 0x0a
  } finally {
    closeSync(fd)
  }
}

async function listRevisions(dir: string): Promise<number[]> {
  let entries: string[]
  try {
    entries = await readdir(dir)
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return []
    throw error
  }
  const revisions: number[] = []
  for (const entry of entries) {
    const match = REVISION_FILE.exec(entry)
    if (match) revisions.push(Number(match[1]))
  }
  return revisions.sort((a, b) => a - b)
}
