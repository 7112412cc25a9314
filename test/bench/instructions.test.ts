/**
 * `bench/instructions.ts` counts instructions per tool step by running each HTTP variant in a
 * process of its own under valgrind. That process is tested here without valgrind (minutes under
 * it): on the built packages it runs the variant's warm-up and counted runs against the scripted
 * model server (or in process, the design's floor beside signalbox), and reports the counted runs'
 * tool steps; an unknown variant is refused by name.
 * No count is asserted: speed is the bench's business, not the tests'.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { describe, expect, it } from 'vitest'

const root = fileURLToPath(new URL('../..', import.meta.url))
const useDist = pathToFileURL(fileURLToPath(new URL('../../bench/loader/use-dist.mjs', import.meta.url))).href

function child(
  args: string[],
  signal: AbortSignal,
  where: 'http' | 'in-process' = 'http',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const p = spawn(
      process.execPath,
      ['--expose-gc', '--import', useDist, '--import', 'tsx', 'bench/lib/instructions-child.ts', where, ...args],
      { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], signal },
    )
    let stdout = ''
    let stderr = ''
    p.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    p.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    p.once('error', reject)
    p.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

describe('bench/instructions.ts: the counted process', () => {
  // In process, the design's floor is counted beside signalbox (what the hook waits cost XState itself).
  it.each([
    ['http', 'openai'],
    ['http', 'floor'],
    ['http', 'signalbox'],
    ['in-process', 'floor'],
    ['in-process', 'floor-hooks'],
    ['in-process', 'signalbox-hooks'],
  ] as const)(
    '%s %s: runs its checked runs on dist/ and reports their tool steps',
    async (where, variant) => {
      // One run of warm-up, two counted: only the counted runs' steps are reported.
      const out = await child([variant, '1', '2', '5'], AbortSignal.timeout(60_000), where)
      expect(out.code, out.stderr).toBe(0)
      expect(JSON.parse(out.stdout.trim().split('\n').at(-1) ?? '')).toEqual({
        variant,
        warmUp: 1,
        runs: 2,
        atOnce: 1,
        steps: 10,
      })
    },
    70_000,
  )

  it('refuses an unknown variant by its name', async () => {
    const out = await child(['nope', '0', '1', '5'], AbortSignal.timeout(60_000))
    expect(out.code).not.toBe(0)
    expect(out.stderr).toContain('unknown variant "nope"')
  }, 70_000)
})
