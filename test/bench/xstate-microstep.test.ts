/**
 * XState keeps every dropped machine actor alive through V8's young collections (the closure its
 * `microstep` writes straight into a property is made in the old generation), and
 * docs/xstate-microstep.patch is the one-line change that stops it (docs/benchmarks.md, "Closures
 * written straight into a property"). Both sides are checked on the copy of XState the packages
 * install: should an XState release fix it, the first assertion says so and the docs go with it.
 */
import { spawn, spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const core = createRequire(path.join(root, 'packages', 'core', 'package.json'))
// dist/xstate.cjs.js, two levels below the package's directory.
const installed = path.dirname(path.dirname(core.resolve('xstate')))
const copy = mkdtempSync(path.join(tmpdir(), 'xstate-patched-'))
afterAll(() => rmSync(copy, { recursive: true, force: true }))

function keptByAnActor(xstate: string | undefined, signal: AbortSignal): Promise<number> {
  return new Promise((resolve, reject) => {
    const args = [
      '--import',
      'tsx',
      'bench/young-retention.ts',
      'xstate-actor',
      '--warm-up',
      '300',
      ...(xstate ? ['--xstate', xstate] : []),
    ]
    const p = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], signal })
    let out = ''
    let err = ''
    p.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    p.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
    p.once('error', reject)
    p.once('close', (code) => {
      const match = /^xstate-actor: (-?[\d.]+) KiB a run/m.exec(out)
      if (code !== 0 || !match) return reject(new Error(`young-retention exited ${code}: ${err}`))
      resolve(Number(match[1]))
    })
  })
}

it('a dropped XState actor outlives the young collections, and not with docs/xstate-microstep.patch applied', async () => {
  const signal = AbortSignal.timeout(100_000)
  // Its context holds 4,000 messages: ~440 KiB.
  expect(await keptByAnActor(undefined, signal)).toBeGreaterThan(300)
  cpSync(installed, copy, { recursive: true })
  const patched = spawnSync('patch', ['-p1', '--forward'], {
    cwd: copy,
    input: readFileSync(path.join(root, 'docs', 'xstate-microstep.patch')),
    encoding: 'utf8',
  })
  expect(patched.status, patched.stdout + patched.stderr).toBe(0)
  expect(await keptByAnActor(copy, signal)).toBeLessThan(5)
}, 110_000)
