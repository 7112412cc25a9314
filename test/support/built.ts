/**
 * How the tests start Node processes of this workspace. A spawned process loads the packages as
 * built (`dist/`, what users install) through the `signalbox-built` export condition that each
 * package's manifest maps to its build; vitest and the type checker keep reading the sources (the
 * `default` condition). The CLI starts on the build in about a third of the CPU its sources take
 * through tsx, and the suite starts a few hundred processes. The global setup
 * (`build-packages.ts`) brings `dist/` up to date before any test that spawns runs.
 */
import { execFile } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { compiledScript } from './script-build.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** Node's flag that resolves `@signalbox/*` to the build. */
export const BUILT_PACKAGES = '--conditions=signalbox-built'

/** `signalbox` as a command line: plain node, the built packages (a `.ts` agent module still loads, through tsx). */
export const SIGNALBOX: readonly string[] = [process.execPath, BUILT_PACKAGES, path.join(ROOT, 'packages/cli/dist/bin.js')]

/**
 * Node's arguments to run a TypeScript script (a fixture, an example), the script included: its
 * compiled bundle under plain node (see script-build.ts), with the packages as built. A package's
 * own fixtures (under `packages/`) may import that package's sources by relative path, so their
 * bundle holds the workspace's packages from the sources: one copy of each package per process.
 * Stack traces point into the bundle; `NODE_OPTIONS=--enable-source-maps` maps them back.
 */
export function tsScript(script: string): string[] {
  const absolute = path.resolve(ROOT, script)
  if (path.relative(ROOT, absolute).startsWith(`packages${path.sep}`)) return [compiledScript(absolute, 'sources')]
  return [BUILT_PACKAGES, compiledScript(absolute, 'built')]
}

/**
 * Builds the packages under the build lock `pnpm bench` uses (`node bench/run.mjs --build-only`):
 * builds started at once (the global setup, the package tests) run one after the other, and a build
 * of a current `dist/` writes nothing, so packing after it needs no lock.
 */
export async function buildPackages(): Promise<void> {
  try {
    await promisify(execFile)(process.execPath, ['bench/run.mjs', '--build-only'], { cwd: ROOT, maxBuffer: 32 * 1024 * 1024 })
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string; message: string }
    throw new Error(`building the packages failed: ${e.message}\n${e.stdout ?? ''}${e.stderr ?? ''}`)
  }
}
