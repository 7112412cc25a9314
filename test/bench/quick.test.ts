/**
 * `pnpm bench --quick` runs end to end: every variant of the in-process and HTTP scenarios (the
 * hand-written loops, signalbox and the peer frameworks) completes its checked runs and prints its
 * row, measuring the built packages; a quick run prints no verdict. No figure is asserted: speed
 * is the bench's business, not the tests'.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { HTTP_LABELS } from '../../bench/scenarios/http.ts'
import { inProcessVariants } from '../../bench/scenarios/in-process.ts'

const root = fileURLToPath(new URL('../..', import.meta.url))
const dir = mkdtempSync(join(tmpdir(), 'signalbox-bench-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

interface Output {
  code: number | null
  stdout: string
  stderr: string
}

function runBench(args: string[], signal: AbortSignal): Promise<Output> {
  return new Promise((resolve, reject) => {
    const child = spawn('pnpm', ['bench', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], signal })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString()
    })
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
    })
    child.once('error', reject)
    child.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}

interface Results {
  meta: { quick: boolean; code: string }
  tables: {
    id: string
    rows: { id: string; label: string; median: number; steps: number }[]
    checks: { name: string; floorValue?: number }[]
  }[]
}

describe('pnpm bench --quick', () => {
  it('runs every in-process and HTTP variant, peers included, and prints each row', async () => {
    const json = join(dir, 'results.json')
    const out = await runBench(
      ['--quick', '--rounds', '1', '--only', 'in-process,http', '--json', json],
      AbortSignal.timeout(170_000),
    )
    expect(out.code, out.stderr).toBe(0)

    const results = JSON.parse(readFileSync(json, 'utf8')) as Results
    expect(results.meta.quick).toBe(true)
    // What users run: the built packages, not the sources through tsx.
    expect(results.meta.code).toBe('built packages (dist/)')
    expect(out.stdout).toContain('measuring dist/')
    // A quick run gives figures, not verdicts: targets are judged on full runs.
    expect(out.stdout).not.toMatch(/\b(MISS|PASS)\b/)
    expect(out.stdout).toContain('targets are judged on a full run')
    const expected = [
      ...inProcessVariants(1, { observed: true }).map((v) => ({ table: 'in-process-', id: v.id, label: v.label })),
      ...Object.entries(HTTP_LABELS).map(([id, label]) => ({ table: 'http-', id, label })),
    ]
    expect(expected.map((v) => v.id)).toEqual(expect.arrayContaining(['aiSdk', 'openaiAgents', 'langGraph', 'signalbox']))
    for (const variant of expected) {
      const table = results.tables.find((t) => t.id.startsWith(variant.table))
      const row = table?.rows.find((r) => r.id === variant.id)
      expect(row, `${variant.table}${variant.id}`).toBeDefined()
      // A row stands for checked runs: a measured time over the tool steps it ran.
      expect(row!.steps).toBeGreaterThan(0)
      expect(Number.isFinite(row!.median) && row!.median > 0).toBe(true)
      expect(out.stdout).toContain(variant.label)
    }
    // Each HTTP ratio is given beside the design's floor measured in the same run (signalbox's
    // chart in XState without signalbox, on the same SDK calls).
    const http = results.tables.find((t) => t.id.startsWith('http-'))
    expect(http?.checks.length).toBe(4)
    for (const check of http?.checks ?? [])
      expect(Number.isFinite(check.floorValue) && check.floorValue! > 0, check.name).toBe(true)
    expect(out.stdout).toContain("the design's floor:")
  }, 180_000)
})
