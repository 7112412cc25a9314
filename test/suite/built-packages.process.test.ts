/**
 * The processes tests start load the packages as built (test/support/built.ts): under the
 * `signalbox-built` condition every entry of every package resolves to the file its published
 * manifest names, in a process of its own as the tests start them; without it, to its sources.
 */
import { execFile } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { BUILT_PACKAGES, SIGNALBOX, TS_LOADER, tsScriptArgs } from '../support/built.ts'

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
      const script = `import { fileURLToPath } from 'node:url'; const out = {}; for (const s of ${JSON.stringify(specifiers)}) out[s] = fileURLToPath(import.meta.resolve(s)); console.log(JSON.stringify(out))`
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

  it('run `signalbox` as the built bin, and TypeScript fixtures through the suite’s loader on the build (a package’s own fixtures on its sources)', () => {
    expect(SIGNALBOX.slice(1)).toEqual([BUILT_PACKAGES, path.join(ROOT, 'packages/cli/dist/bin.js')])
    expect(tsScriptArgs('test/durable/fixtures/durable-agent.ts')).toEqual([BUILT_PACKAGES, '--import', TS_LOADER])
    expect(tsScriptArgs('examples/trains/demo.ts')).toEqual([BUILT_PACKAGES, '--import', TS_LOADER])
    expect(tsScriptArgs(path.join(ROOT, 'packages/core/test/store/fixtures/store-writer-child.ts'))).toEqual([
      '--import',
      TS_LOADER,
    ])
  })

  it('the loader runs TypeScript as tsc reads it: types stripped, type-only imports gone, stack traces on the .ts lines', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'signalbox-ts-loader-'))
    try {
      // A type-only import of a name with no runtime export: were it kept, Node would fail to link the module.
      await writeFile(
        path.join(dir, 'shapes.ts'),
        'export interface Shape { sides: number }\nexport const square = { sides: 4 }\n',
      )
      const script = path.join(dir, 'main.ts')
      await writeFile(
        script,
        [
          "import { type Shape, square } from './shapes.ts'",
          'const shapes: Shape[] = [square, { sides: 3 } satisfies Shape]',
          'console.log(JSON.stringify(shapes.map((s) => s.sides)))',
          'if (process.argv[2] === "throw") throw new Error("from line 4")',
        ].join('\n'),
      )
      const ok = await run(process.execPath, [...tsScriptArgs(script), script], { cwd: dir })
      expect(ok.stdout.trim()).toBe('[4,3]')
      const thrown = await run(process.execPath, [...tsScriptArgs(script), script, 'throw'], { cwd: dir }).catch(
        (e: { stderr: string }) => e,
      )
      expect((thrown as { stderr: string }).stderr).toContain(`${script}:4`)
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
