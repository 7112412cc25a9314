/**
 * The processes tests start load the packages as built (test/support/built.ts): under the
 * `signalbox-built` condition every entry of every package resolves to the file its published
 * manifest names, in a process of its own as the tests start them; without it, to its sources.
 * TypeScript scripts run compiled (test/support/script-build.ts).
 */
import { execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { BUILT_PACKAGES, SIGNALBOX, tsScript } from '../support/built.ts'
import { compiledScript } from '../support/script-build.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)

interface Manifest {
  name: string
  exports: Record<string, { 'signalbox-built': string; default: string }>
  publishConfig: { exports: Record<string, { import: string }> }
}

const packages = readdirSync(path.join(ROOT, 'packages')).map((dir) => ({
  dir: path.join(ROOT, 'packages', dir),
  manifest: JSON.parse(readFileSync(path.join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as Manifest,
}))
const entries = packages.flatMap(({ dir, manifest }) =>
  Object.keys(manifest.exports).map((sub) => ({
    dir,
    specifier: `${manifest.name}${sub.slice(1)}`,
    built: path.join(dir, manifest.publishConfig.exports[sub]?.import ?? '(none)'),
    source: path.join(dir, manifest.exports[sub]?.default ?? '(none)'),
  })),
)

/** Where each entry resolves in Node processes started with `flags`, each package resolving its own name from its folder. */
async function resolved(flags: string[]): Promise<Record<string, string>> {
  const perPackage = await Promise.all(
    packages.map(async ({ dir }) => {
      const specifiers = entries.filter((e) => e.dir === dir).map((e) => e.specifier)
      const script = `import { fileURLToPath, pathToFileURL } from 'node:url'; const out = {}; for (const s of ${JSON.stringify(specifiers)}) out[s] = fileURLToPath(import.meta.resolve(s)); console.log(JSON.stringify(out))`
      const { stdout } = await run(process.execPath, [...flags, '--input-type=module', '-e', script], { cwd: dir })
      return JSON.parse(stdout) as Record<string, string>
    }),
  )
  return Object.assign({}, ...perPackage)
}

describe('processes started by the tests', () => {
  it('resolve every entry of every package to its build, as published; node without the condition gets the sources', async () => {
    expect(entries.length).toBeGreaterThan(10)
    const [built, plain] = await Promise.all([resolved([BUILT_PACKAGES]), resolved([])])
    expect(built).toEqual(Object.fromEntries(entries.map((e) => [e.specifier, e.built])))
    expect(plain).toEqual(Object.fromEntries(entries.map((e) => [e.specifier, e.source])))
  })

  it('run `signalbox` as the built bin, TypeScript fixtures compiled on the build, and a package’s own fixtures compiled with the sources', () => {
    expect(SIGNALBOX.slice(1)).toEqual([BUILT_PACKAGES, path.join(ROOT, 'packages/cli/dist/bin.js')])
    expect(tsScript('test/durable/fixtures/durable-agent.ts')).toEqual([
      BUILT_PACKAGES,
      path.join(ROOT, 'test/node_modules/.cache/signalbox-scripts/durable/fixtures/durable-agent.mjs'),
    ])
    expect(tsScript('examples/trains/demo.ts')).toEqual([
      BUILT_PACKAGES,
      path.join(ROOT, 'examples/node_modules/.cache/signalbox-scripts/trains/demo.mjs'),
    ])
    expect(tsScript(path.join(ROOT, 'packages/core/test/store/fixtures/store-writer-child.ts'))).toEqual([
      path.join(ROOT, 'packages/core/node_modules/.cache/signalbox-scripts/test/store/fixtures/store-writer-child.mjs'),
    ])
  })

  it('a compiled script runs as tsc reads it, its files keep their own import.meta and the process sees the script as its entry, an edit to an imported file is compiled again, and source maps lead back to the .ts lines', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'signalbox-script-build-'))
    try {
      await writeFile(path.join(dir, 'package.json'), '{ "type": "module" }\n')
      await mkdir(path.join(dir, 'lib'))
      const shapes = path.join(dir, 'lib', 'shapes.ts')
      await writeFile(
        shapes,
        'export interface Shape { sides: number }\nexport const square = { sides: 4 }\nexport const here = import.meta.url\n',
      )
      const script = path.join(dir, 'main.ts')
      await writeFile(
        script,
        [
          "import { here, type Shape, square } from './lib/shapes.ts'",
          'const shapes: Shape[] = [square, { sides: 3 } satisfies Shape]',
          'console.log(JSON.stringify({ sides: shapes.map((s) => s.sides), here, me: import.meta.url, argv: process.argv[1] }))',
          'if (process.argv[2] === "throw") throw new Error("from line 4")',
        ].join('\n'),
      )
      const first = await run(process.execPath, tsScript(script), { cwd: dir })
      expect(JSON.parse(first.stdout)).toEqual({
        sides: [4, 3],
        here: pathToFileURL(shapes).href,
        me: pathToFileURL(script).href,
        // An entry check (`import.meta.url === pathToFileURL(process.argv[1]).href`) holds.
        argv: script,
      })
      expect(tsScript(script)[1]).toBe(path.join(dir, 'node_modules/.cache/signalbox-scripts/main.mjs'))

      await writeFile(
        shapes,
        'export interface Shape { sides: number }\nexport const square = { sides: 5 }\nexport const here = 0\n',
      )
      const edited = await run(process.execPath, [BUILT_PACKAGES, compiledScript(script)], { cwd: dir })
      expect(JSON.parse(edited.stdout)).toMatchObject({ sides: [5, 3], here: 0 })

      const thrown = await run(process.execPath, ['--enable-source-maps', compiledScript(script), 'throw'], { cwd: dir }).catch(
        (e: { stderr: string }) => e,
      )
      expect((thrown as { stderr: string }).stderr).toContain(`${script}:4`)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
