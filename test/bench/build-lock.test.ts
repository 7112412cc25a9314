/**
 * `pnpm bench` builds the packages before it measures them, under a lock file: two benches started
 * at once do not write `dist/` together (the second waits for the first's build), and a lock left
 * by a process that died is taken over.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
// Its own lock file: the suite's other builds (the test setup, the package tests) take the default
// one, and one of them holding it would make both benches here wait.
const lock = join(root, 'node_modules', '.cache', `signalbox-build-lock-test-${process.pid}.lock`)

function buildOnly(): { child: ChildProcess; done: Promise<{ code: number | null; out: string }> } {
  const child = spawn(process.execPath, ['bench/run.mjs', '--build-only'], {
    cwd: root,
    env: { ...process.env, SIGNALBOX_BUILD_LOCK: lock },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString()
  })
  const done = new Promise<{ code: number | null; out: string }>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, out }))
  })
  return { child, done }
}

describe('the bench build lock', () => {
  it('two benches started at once build one after the other; the lock is gone after', async () => {
    const first = buildOnly()
    const second = buildOnly()
    const [a, b] = await Promise.all([first.done, second.done])
    expect(a.code, a.out).toBe(0)
    expect(b.code, b.out).toBe(0)
    // Exactly one waited, for the other's build.
    const waited = [
      { run: a, other: second.child.pid },
      { run: b, other: first.child.pid },
    ].filter(({ run }) => run.out.includes("waiting for another bench's build"))
    expect(waited).toHaveLength(1)
    expect(waited[0]?.run.out).toContain(`(pid ${waited[0]?.other})`)
    for (const run of [a, b]) expect(run.out).toContain('measuring dist/')
    expect(existsSync(lock)).toBe(false)
  }, 240_000)

  it('takes over a lock left by a process that no longer exists', async () => {
    const gone = spawn(process.execPath, ['-e', ''], { stdio: 'ignore' })
    await new Promise((resolve) => gone.once('exit', resolve))
    writeFileSync(lock, String(gone.pid))
    const { code, out } = await buildOnly().done
    expect(code, out).toBe(0)
    expect(out).not.toContain('waiting for')
    expect(existsSync(lock)).toBe(false)
  }, 240_000)
})
