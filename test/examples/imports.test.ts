/**
 * The examples use the packages as a user would: by name, through their public entry points,
 * never by a path into a package's sources.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const EXAMPLES = fileURLToPath(new URL('../../examples', import.meta.url))

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) return []
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? sources(full) : /\.[cm]?[jt]s$/.test(entry.name) ? [full] : []
  })
}

describe('examples', () => {
  it('import no package by path (only @signalbox/<package> and its public subpaths)', () => {
    const offending: string[] = []
    for (const file of sources(EXAMPLES)) {
      const text = readFileSync(file, 'utf8')
      for (const [, specifier] of text.matchAll(/(?:from\s+|import\(\s*)['"]([^'"]+)['"]/g)) {
        if (/(^|\/)packages\/|^@signalbox\/[^/]+\/(src|dist)\//.test(specifier as string))
          offending.push(`${path.relative(EXAMPLES, file)}: ${specifier}`)
      }
    }
    expect(offending).toEqual([])
  })
})
