/**
 * vitest global setup: the processes the tests start load the packages as built (see built.ts),
 * so `dist/` is brought up to date first, under the build lock `pnpm bench` uses (a no-op build
 * takes about a second; a fresh clone's, some 20 s). Only the projects that start processes need
 * it: `pnpm test --project unit` builds nothing.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { TestProject } from 'vitest/node'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SPAWNING = new Set(['processes', 'browser'])

export default async function setup(project: TestProject): Promise<void> {
  if (!SPAWNING.has(project.name)) return
  const started = performance.now()
  const child = spawn(process.execPath, ['bench/run.mjs', '--build-only'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8')
  })
  child.stderr.on('data', (chunk: Buffer) => {
    output += chunk.toString('utf8')
  })
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject)
    child.once('close', resolve)
  })
  if (code !== 0) throw new Error(`building the packages for the ${project.name} tests failed (exit ${code}):\n${output}`)
  const seconds = (performance.now() - started) / 1000
  if (seconds > 5) console.log(`packages built for the ${project.name} tests in ${seconds.toFixed(1)} s`)
}
