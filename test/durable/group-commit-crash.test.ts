/**
 * Group commit under SIGKILL: 50 runs of one process write to one FileRunStore, sharing its
 * commit log's flushes, until the process is killed mid-burst. Every run that started a tool
 * finds that call's `started` record (or what came after it) in the store; and so it does when
 * the kill is taken for a power loss that cut every run's log back to its first record, the
 * commit log writing the committed records back.
 */
import { mkdtemp, readdir, rm, truncate } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { FileRunStore } from '@signalbox/core/store'
import { afterEach, describe, expect, it } from 'vitest'
import { startCrashChild } from '../support/crash-harness.ts'
import { checkpointLines, runLogFile } from '../support/run-log-files.ts'

const RUNS = 50
const signal = () => AbortSignal.timeout(30_000)
const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

/** Runs the burst, kills it, and returns the last call each run started. */
async function burst(storeDir: string): Promise<Map<string, string>> {
  const child = await startCrashChild('test/durable/fixtures/burst-agent.ts', { args: [storeDir, String(RUNS)], ready: 'ready' })
  // Well into the burst: several steps of every run.
  await child.waitForLine(new RegExp(`^started run_${RUNS - 1} c3$`), 60_000)
  expect(await child.kill()).toMatchObject({ signal: 'SIGKILL' })
  const started = new Map<string, string>()
  for (const [, runId, callId] of child.stdout().matchAll(/^started (\S+) (\S+)$/gm))
    started.set(runId as string, callId as string)
  expect(started.size).toBe(RUNS)
  return started
}

async function expectEveryStartFound(storeDir: string, started: Map<string, string>): Promise<void> {
  const store = new FileRunStore({ directory: storeDir })
  for (const [runId, callId] of started) {
    const stored = await store.load(runId, { signal: signal() })
    const length = stored?.checkpoint.transcript.length ?? 0
    const messages = await store.readMessages(runId, { length, signal: signal() })
    const inLedger = stored?.checkpoint.ledger.some((entry) => entry.callId === callId) ?? false
    const recorded = messages.some((m) => m.role === 'tool' && m.tool_call_id === callId)
    expect(inLedger || recorded, `${runId} ${callId}`).toBe(true)
  }
}

describe('group commit: SIGKILL during a burst of writes from 50 runs', { timeout: 120_000 }, () => {
  it('every run that started a tool finds its started record after the kill', async () => {
    const storeDir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-burst-'))
    dirs.push(storeDir)
    const started = await burst(storeDir)
    expect((await readdir(storeDir)).some((name) => name.startsWith('.commit-'))).toBe(true)
    await expectEveryStartFound(storeDir, started)
  })

  it('and after a power loss that cut every run log back to its first record, from the commit log', async () => {
    const storeDir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-burst-'))
    dirs.push(storeDir)
    const started = await burst(storeDir)
    for (const runId of started.keys()) {
      const file = runLogFile(storeDir, runId)
      await truncate(file, (checkpointLines(file)[0] as { end: number }).end)
    }
    await expectEveryStartFound(storeDir, started)
  })
})
