/**
 * vitest global setup: the processes the tests start load the packages as built (see built.ts),
 * so `dist/` is brought up to date first (`buildPackages`: a no-op build takes about a second; a
 * fresh clone's, some 20 s). Only the projects that start processes need it: `pnpm test --project
 * unit` builds nothing.
 */
import type { TestProject } from 'vitest/node'
import { buildPackages } from './built.ts'

const SPAWNING = new Set(['processes', 'browser'])

export default async function setup(project: TestProject): Promise<void> {
  if (!SPAWNING.has(project.name)) return
  const started = performance.now()
  await buildPackages()
  const seconds = (performance.now() - started) / 1000
  if (seconds > 5) console.log(`packages built for the ${project.name} tests in ${seconds.toFixed(1)} s`)
}
