/**
 * A TypeScript script the suite starts as a process (a fixture, an example), compiled once to one
 * ESM file so that the process runs under plain `node`. Node 20 runs module hooks on a thread of
 * their own and asks it about every module a process loads: through a loader, a child that
 * loads the packages spent about 0.35 s of CPU more than the same child on plain JavaScript, and
 * the suite starts well over a hundred of them.
 *
 * The bundle holds the script and the files it imports by relative path; every package stays an
 * import (resolved at run time, so `--conditions=signalbox-built` still picks the build), or, for a
 * package's own fixtures, the workspace's packages are bundled from their sources. It is
 * written under the script's own package (`<package>/node_modules/.cache/signalbox-scripts/`), so
 * those imports resolve exactly as they do from the script, and each file's `import.meta.url`,
 * `dirname` and `filename` are its source's. A manifest of the inputs' hashes says when the bundle
 * is stale without starting esbuild.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const CACHE_DIR = 'node_modules/.cache/signalbox-scripts'
const BUNDLER = fileURLToPath(new URL('./script-bundler.mjs', import.meta.url))

/** `built`: the workspace's packages stay imports, for `--conditions=signalbox-built`; `sources`: their sources are bundled. */
export type ScriptPackages = 'built' | 'sources'

interface Manifest {
  packages: ScriptPackages
  /** Each bundled source file (absolute) and the sha1 of its content. */
  inputs: Record<string, string>
}

/** The compiled bundle of `script` (an absolute path to a `.ts` file), built if missing or stale. */
export function compiledScript(script: string, packages: ScriptPackages = 'built'): string {
  const root = packageRoot(script)
  const out = path.join(root, CACHE_DIR, `${path.relative(root, script).replace(/\.[cm]?ts$/, '')}.mjs`)
  if (!isCurrent(`${out}.json`, packages)) build(script, out, packages)
  return out
}

function isCurrent(manifestFile: string, packages: ScriptPackages): boolean {
  let manifest: Manifest
  try {
    manifest = JSON.parse(readFileSync(manifestFile, 'utf8')) as Manifest
  } catch {
    return false
  }
  // The bundler is an input of every bundle: a bundle made by another version of it is stale.
  if (manifest.packages !== packages || !(BUNDLER in manifest.inputs)) return false
  for (const [file, hash] of Object.entries(manifest.inputs)) {
    let source: string
    try {
      source = readFileSync(file, 'utf8')
    } catch {
      return false
    }
    if (sha1(source) !== hash) return false
  }
  return existsSync(manifestFile.slice(0, -'.json'.length))
}

/** Bundles in a child process (see script-bundler.mjs); its error, if any, says what failed to compile. */
function build(script: string, out: string, packages: ScriptPackages): void {
  try {
    execFileSync(process.execPath, [BUNDLER, script, out, packages], { stdio: ['ignore', 'pipe', 'pipe'] })
  } catch (error) {
    const e = error as { stderr?: Buffer; message: string }
    throw new Error(`compiling ${script} failed: ${e.stderr?.toString() || e.message}`)
  }
}

/** The folder of the nearest `package.json` above `file`. */
function packageRoot(file: string): string {
  let dir = path.dirname(file)
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error(`${file} is in no package`)
    dir = parent
  }
  return dir
}

function sha1(text: string): string {
  return createHash('sha1').update(text).digest('hex')
}
