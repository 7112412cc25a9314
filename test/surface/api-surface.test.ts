/**
 * The public API is a contract: every name every entry point exports, types included, is pinned
 * in api-surface.json. Adding or removing one is a decision (rewrite the pin with
 * `pnpm tsx test/surface/entry-points.ts > test/surface/api-surface.json && pnpm biome format --write test/surface` and say why in the
 * commit), never an accident. The `/internal` entry points are for the signalbox packages and
 * their tests: they say they are unstable, their package's README says so too, and a name lives
 * in one of the two, not both.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import pinned from './api-surface.json' with { type: 'json' }
import { entryPoints, exportedNames, ROOT } from './entry-points.ts'

const entries = entryPoints()
const names = exportedNames(entries)
const internals = entries.filter((e) => e.specifier.endsWith('/internal'))

describe('the API surface', () => {
  it('every entry point exports exactly the pinned names', () => {
    expect(names).toEqual(pinned)
  })

  it('every /internal entry point says it is unstable, and so does its package README', () => {
    expect(internals.map((e) => e.specifier).sort()).toEqual([
      '@signalbox/actors/internal',
      '@signalbox/cli/internal',
      '@signalbox/console/internal',
      '@signalbox/core/internal',
    ])
    for (const entry of internals) {
      expect(readFileSync(entry.file, 'utf8'), entry.specifier).toMatch(/Not part of the public API/)
      const readme = readFileSync(path.join(path.dirname(entry.file), '..', 'README.md'), 'utf8')
      expect(readme, `${entry.package} README`).toContain(`\`${entry.specifier}\``)
      expect(readme, `${entry.package} README`).toMatch(/unstable/i)
    }
  })

  it('a name is public or internal, not both', () => {
    for (const internal of internals) {
      const hidden = new Set(names[internal.specifier])
      for (const entry of entries.filter((e) => e.package === internal.package && e !== internal)) {
        expect(
          names[entry.specifier]?.filter((n) => hidden.has(n)),
          `${entry.specifier} and ${internal.specifier}`,
        ).toEqual([])
      }
    }
  })

  it('no test imports another package by a relative path into its sources or tests', () => {
    expect(relativeImports()).toEqual([])
  })
})

/** `from '../../packages/x/src/...'` or `from '../../../core/test/...'` in any test file or test helper. */
function relativeImports(): string[] {
  const files = testSources()
  const crossing = /from '(?:\.\.\/)+(?:packages\/)?(?:actors|ai-sdk|cli|console|core|mcp|otel)\/(?:src|test)\//
  return files.filter((file) => {
    if (file === path.join('test', 'surface', 'api-surface.test.ts')) return false
    const text = readFileSync(path.join(ROOT, file), 'utf8')
    if (!crossing.test(text)) return false
    // Its own package's sources (`../../src/...` from packages/x/test) are not another package.
    const own = file.match(/^packages\/([^/]+)\//)?.[1]
    return [...text.matchAll(new RegExp(crossing.source, 'g'))].some((m) => !own || !m[0].includes(`/${own}/`))
  })
}

function testSources(): string[] {
  const roots = ['test', ...readdirSync(path.join(ROOT, 'packages')).map((p) => `packages/${p}/test`)]
  return roots.flatMap((root) => {
    try {
      return readdirSync(path.join(ROOT, root), { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts') && !f.split(path.sep).includes('node_modules'))
        .map((f) => path.join(root, f))
    } catch {
      return []
    }
  })
}
