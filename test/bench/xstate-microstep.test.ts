/**
 * XState keeps every dropped machine actor alive through V8's young collections (the closure its
 * `microstep` writes straight into a property is made in the old generation), and
 * docs/xstate-microstep.patch is the one-line change that stops it (docs/benchmarks.md, "Closures
 * written straight into a property"). Both sides are checked on the copy of XState the packages
 * install: should an XState release fix it, the first assertion says so and the docs go with it.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, expect, it } from 'vitest'
import { youngRetention } from './young-retention-run.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const core = createRequire(path.join(root, 'packages', 'core', 'package.json'))
// dist/xstate.cjs.js, two levels below the package's directory.
const installed = path.dirname(path.dirname(core.resolve('xstate')))
const copy = mkdtempSync(path.join(tmpdir(), 'xstate-patched-'))
afterAll(() => rmSync(copy, { recursive: true, force: true }))

async function keptByAnActor(xstate: string | undefined, signal: AbortSignal): Promise<number> {
  const kept = await youngRetention(['xstate-actor', '--warm-up', '300', ...(xstate ? ['--xstate', xstate] : [])], signal)
  if (kept['xstate-actor'] === undefined) throw new Error('young-retention printed no xstate-actor line')
  return kept['xstate-actor']
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
