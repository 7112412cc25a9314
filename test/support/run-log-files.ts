/**
 * Reaching into a `FileRunStore` directory the way a crash, a full disk or a newer signalbox
 * would leave it: the run's current log (`<dir>/<run>/log.<n>`, format in
 * packages/core/src/store/run-log.ts, generations in run-dir.ts). The helpers that damage a log
 * first drop the store's commit logs (commit-log.ts), as if they had been retired: otherwise the
 * next store would write the acknowledged records back, as it does after a power loss.
 */
import { readdirSync, readFileSync, rmSync, truncateSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { runKey } from '@signalbox/core/internal'

/** The run's newest log file. */
export function runLogFile(storeDir: string, runId: string): string {
  const dir = path.join(storeDir, runKey(runId))
  const generations = readdirSync(dir)
    .map((name) => /^log\.(\d+)$/.exec(name)?.[1])
    .filter((g): g is string => g !== undefined)
    .map(Number)
  if (generations.length === 0) throw new Error(`no run log in ${dir}`)
  return path.join(dir, `log.${Math.max(...generations)}`)
}

/** Offsets of the log's checkpoint records: where each line starts and ends (after its newline). */
export function checkpointLines(file: string): { start: number; end: number }[] {
  const bytes = readFileSync(file)
  const lines: { start: number; end: number }[] = []
  for (let start = 0; start < bytes.byteLength; ) {
    const newline = bytes.indexOf(0x0a, start)
    const end = newline < 0 ? bytes.byteLength : newline + 1
    if ((bytes[start] === 0x43 /* C */ || bytes[start] === 0x53) /* S */ && bytes[start + 1] === 0x20) lines.push({ start, end })
    start = end
  }
  return lines
}

/** Removes the store's commit logs (what a store would write back into its run logs). */
export function dropCommitLogs(storeDir: string): void {
  for (const name of readdirSync(storeDir)) if (name.startsWith('.commit-')) rmSync(path.join(storeDir, name))
}

/** Cuts the log in the middle of its first checkpoint record: no complete checkpoint is left. */
export function cutInsideFirstCheckpoint(storeDir: string, runId: string): void {
  dropCommitLogs(storeDir)
  const file = runLogFile(storeDir, runId)
  const first = checkpointLines(file)[0]
  if (!first) throw new Error(`no checkpoint record in ${file}`)
  truncateSync(file, Math.floor((first.start + first.end) / 2))
}

/** Replaces the payload of the log's last checkpoint record by `edit(payload)`, as a whole record (its length updated). */
export function rewriteLatestCheckpoint(storeDir: string, runId: string, edit: (json: string) => string): void {
  dropCommitLogs(storeDir)
  const file = runLogFile(storeDir, runId)
  const bytes = readFileSync(file)
  const last = checkpointLines(file).at(-1)
  if (!last) throw new Error(`no checkpoint record in ${file}`)
  const line = bytes.toString('utf8', last.start, last.end - 1)
  const match = /^[CS] (\d+) (\S+) (\d+) /.exec(line)
  if (!match) throw new Error(`not a checkpoint record: ${line.slice(0, 80)}`)
  const payload = Buffer.from(edit(line.slice(match[0].length)))
  const record = Buffer.concat([
    Buffer.from(`${line[0]} ${match[1]} ${match[2]} ${payload.byteLength} `),
    payload,
    Buffer.from('\n'),
  ])
  writeFileSync(file, Buffer.concat([bytes.subarray(0, last.start), record, bytes.subarray(last.end)]))
}
