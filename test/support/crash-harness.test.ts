import { mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { isAlive, startCrashChild } from './crash-harness.ts'

const FIXTURE = 'test/support/fixtures/crash-child.ts'

describe('startCrashChild', () => {
  let dir: string | undefined
  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true })
  })

  it('runs the script as one process, waits for readiness, and SIGKILL by pid ends it', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'crash-harness-'))
    const file = path.join(dir, 'effects.txt')
    const child = await startCrashChild(FIXTURE, { args: [file], ready: /^ready pid=\d+$/ })
    // The pid the script sees is the pid we kill: no tsx parent in between.
    expect(child.output()).toContain(`ready pid=${child.pid}`)
    child.send('one')
    await child.waitForLine('wrote one')
    expect(await readFile(file, 'utf8')).toBe('one\n')

    const exit = await child.kill()
    expect(exit).toEqual({ code: null, signal: 'SIGKILL' })
    expect(isAlive(child.pid)).toBe(false)
    child.send('two') // to a dead process: ignored, no effect
    expect(await readFile(file, 'utf8')).toBe('one\n')
  })

  it('rejects with the output when the child exits before its readiness line', async () => {
    const error = await startCrashChild(FIXTURE, { args: ['', 'fail-early'], ready: /^ready pid=/ }).then(
      () => undefined,
      (reason: unknown) => reason as Error,
    )
    expect(error?.message).toContain('exited before printing')
    expect(error?.message).toContain('fixture: failing before ready')
  })
})
