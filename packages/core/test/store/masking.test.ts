/**
 * A stored run keeps the masking: what a store writes of a tool's output is what the model read
 * (after the `afterToolExecution` hooks), never the raw output, unless the agent asks to keep it
 * (`storeRawToolOutput`). Checked by reading every byte the file store wrote, through a hook slow
 * enough for lease renewals and steering to be written while it runs, a cancel while it runs, and
 * what a crash while it runs leaves to resume.
 */
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { CARD, cardAgent, gate, MASKED } from '../../../../test/support/store/card-agent.ts'
import { FileRunStore } from '../../src/store/index.ts'
import { OUTCOME_UNKNOWN, outcomeUnknownText } from '../../src/store/ledger.ts'

const signal = new AbortController().signal
const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-masking-'))
  dirs.push(dir)
  return dir
}

/** Every byte under `dir`, as text (run logs, transcripts, temp files: whatever the store left). */
async function everything(dir: string): Promise<string> {
  let text = ''
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) text += await readFile(path.join(entry.parentPath, entry.name), 'latin1')
  }
  return text
}

describe('stored runs keep the masking', () => {
  it('the file store never holds the raw output: not while the hook runs (renewals, steering), not after', async () => {
    const directory = await tempDir()
    const hook = gate()
    const agent = cardAgent(new FileRunStore({ directory }), hook)
    const handle = agent.start('what card do I have?', { runId: 'run_card' })
    await hook.entered
    handle.steer('answer briefly')
    // Lease renewals (every 10 ms) write while the hook holds the raw output.
    const stored = new FileRunStore({ directory })
    const before = (await stored.load('run_card', { signal }))?.revision as number
    for (let i = 0; i < 100 && ((await stored.load('run_card', { signal }))?.revision ?? 0) < before + 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    expect((await stored.load('run_card', { signal }))?.revision).toBeGreaterThanOrEqual(before + 3)
    expect(await everything(directory)).not.toContain(CARD)
    hook.release()
    const result = await handle.result
    expect(result.status).toBe('done')
    expect(result.messages.find((m) => m.role === 'tool')?.content).toBe(MASKED)

    const text = await everything(directory)
    expect(text).not.toContain(CARD)
    expect(text).toContain(MASKED)
    const final = await stored.load('run_card', { signal })
    expect(final?.checkpoint.ledger).toMatchObject([{ callId: 'c1', state: 'finished', result: { output: MASKED } }])
  })

  it('a run cancelled while its hook runs stores no raw output either', async () => {
    const directory = await tempDir()
    const hook = gate()
    const agent = cardAgent(new FileRunStore({ directory }), hook)
    const handle = agent.start('what card do I have?', { runId: 'run_cancel' })
    await hook.entered
    handle.cancel('changed my mind')
    await expect(handle.result).rejects.toThrow()
    hook.release()
    const stored = await new FileRunStore({ directory }).load('run_cancel', { signal })
    expect(stored?.checkpoint.status).toBe('cancelled')
    expect(await everything(directory)).not.toContain(CARD)
  })

  it('with storeRawToolOutput the raw output is kept (and found by the same search)', async () => {
    const directory = await tempDir()
    const hook = gate()
    hook.release()
    const agent = cardAgent(new FileRunStore({ directory }), hook, { storeRawToolOutput: true })
    const result = await agent.run('what card do I have?', { runId: 'run_raw' })
    expect(result.messages.find((m) => m.role === 'tool')?.content).toBe(MASKED)
    expect(await everything(directory)).toContain(CARD)
  })

  it('a crash while the hook runs resumes with the outcome unknown; with storeRawToolOutput, with the result masked again', async () => {
    for (const storeRawToolOutput of [false, true]) {
      const directory = await tempDir()
      const hook = gate()
      const first = cardAgent(new FileRunStore({ directory }), hook, { storeRawToolOutput })
      first.start('what card do I have?', { runId: 'run_crash' })
      await hook.entered
      // What a process killed now leaves on disk.
      const copy = await tempDir()
      await cp(directory, copy, { recursive: true })
      expect((await everything(copy)).includes(CARD)).toBe(storeRawToolOutput)

      const reader = gate()
      reader.release()
      const second = cardAgent(new FileRunStore({ directory: copy }), reader, { storeRawToolOutput })
      const resumed = await (await second.resume('run_crash')).result
      const read = resumed.messages.find((m) => m.role === 'tool')?.content
      if (storeRawToolOutput) expect(read).toBe(MASKED)
      else expect(read).toBe(outcomeUnknownText('lookup_card'))
      const stored = await new FileRunStore({ directory: copy }).load('run_crash', { signal })
      expect(stored?.checkpoint.ledger[0]?.state).toBe('finished')
      if (!storeRawToolOutput) {
        expect(stored?.checkpoint.ledger[0]).toMatchObject({ result: { outcome: OUTCOME_UNKNOWN } })
        expect(await everything(copy)).not.toContain(CARD)
      }
      hook.release()
    }
  })
})
