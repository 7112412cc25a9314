/**
 * `attw <tarball> --profile <profile> --format table-flipped` for several tarballs in one process:
 * the CLI takes one tarball, and each run loads TypeScript and its libraries again (about 2 s of CPU
 * for a check that then takes a fraction of a second). Same analysis (attw's core on the tarball's
 * contents), profile, report and exit code as the CLI, from the CLI's own modules (no `.attw.json` is
 * read: the workspace has none).
 *
 *   node are-the-types-wrong.mjs esm-only a.tgz b.tgz
 *
 * Prints `{ [tarball]: { code, report } }` as JSON: the CLI's exit code (0 passes, 1 problems, 3 the
 * check failed) and what it would print; exits with 1 when any tarball fails.
 */
import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import path from 'node:path'
import { pathToFileURL } from 'node:url'

const [profile, ...tarballs] = process.argv.slice(2)
// No colours in the report, as the CLI's `--no-color` (chalk reads this when it loads).
process.env.FORCE_COLOR = '0'
// The CLI exports its exit code and rendering; its profiles and attw's core are reached from its folder.
const require = createRequire(import.meta.url)
const cliManifest = require.resolve('@arethetypeswrong/cli/package.json')
const fromCli = (file) => import(pathToFileURL(path.join(path.dirname(cliManifest), file)).href)
const core = await import(pathToFileURL(createRequire(cliManifest).resolve('@arethetypeswrong/core')).href)
const { getExitCode } = await import('@arethetypeswrong/cli/internal/getExitCode')
const render = await import('@arethetypeswrong/cli/internal/render')
const { applyProfile, profiles } = await fromCli('dist/profiles.js')
if (!(profile in profiles)) throw new Error(`no attw profile ${profile}: ${Object.keys(profiles).join(', ')}`)
const opts = { format: 'table-flipped', ignoreRules: [] }
applyProfile(profile, opts)

const results = {}
for (const tarball of tarballs) {
  try {
    const analysis = await core.checkPackage(core.createPackageFromTarballData(new Uint8Array(await readFile(tarball))))
    results[tarball] = analysis.types
      ? { code: getExitCode(analysis, opts), report: await render.typed(analysis, opts) }
      : { code: 0, report: render.untyped(analysis) }
  } catch (error) {
    results[tarball] = { code: 3, report: `error while checking file:\n${error instanceof Error ? error.message : error}` }
  }
}
console.log(JSON.stringify(results))
process.exitCode = Object.values(results).some((result) => result.code !== 0) ? 1 : 0
