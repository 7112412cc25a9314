/**
 * Every name each entry point of each package exports, values and types alike, read with the
 * TypeScript compiler from the sources the `exports` field names. Used by the surface pin test;
 * `pnpm tsx test/surface/entry-points.ts > test/surface/api-surface.json && pnpm biome format --write test/surface` rewrites the pin.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))

export interface EntryPoint {
  /** `@signalbox/core/bus` */
  specifier: string
  package: string
  file: string
}

export function entryPoints(): EntryPoint[] {
  return readdirSync(path.join(ROOT, 'packages')).flatMap((dir) => {
    const manifest = JSON.parse(readFileSync(path.join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as {
      name: string
      // Each entry: the sources by default, the build under the `signalbox-built` condition (test/support/built.ts).
      exports: Record<string, { default: string }>
    }
    return Object.entries(manifest.exports).map(([sub, target]) => ({
      specifier: `${manifest.name}${sub.slice(1)}`,
      package: manifest.name,
      file: path.join(ROOT, 'packages', dir, target.default),
    }))
  })
}

/** Entry point → its exported names, sorted. */
export function exportedNames(entries: EntryPoint[] = entryPoints()): Record<string, string[]> {
  const config = ts.parseJsonConfigFileContent(JSON.parse(readFileSync(path.join(ROOT, 'tsconfig.json'), 'utf8')), ts.sys, ROOT)
  const program = ts.createProgram(
    entries.map((e) => e.file),
    config.options,
  )
  const checker = program.getTypeChecker()
  const names: Record<string, string[]> = {}
  for (const entry of [...entries].sort((a, b) => a.specifier.localeCompare(b.specifier))) {
    const source = program.getSourceFile(entry.file)
    const symbol = source && checker.getSymbolAtLocation(source)
    if (!symbol) throw new Error(`${entry.specifier}: cannot read ${entry.file}`)
    names[entry.specifier] = checker
      .getExportsOfModule(symbol)
      .map((s) => s.name)
      .sort()
  }
  return names
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(JSON.stringify(exportedNames(), null, 2))
}
