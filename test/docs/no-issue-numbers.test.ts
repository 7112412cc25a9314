/**
 * Code and docs speak of the project, not of the tracker that shaped it: a tracker number in a
 * comment or a doc means nothing to a reader of the package.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'

const root = path.join(import.meta.dirname, '..', '..')
const SKIP = new Set(['node_modules', 'dist', '.git', 'assets'])
const TEXT = /\.(ts|mts|mjs|js|md|sh|json)$/
const ISSUE = /\bissues? #?\d+/i

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (SKIP.has(entry.name)) return []
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) return files(file)
    return TEXT.test(entry.name) ? [file] : []
  })
}

describe('code and docs', () => {
  it('name no tracker issue', () => {
    const roots = ['README.md', 'CONTRIBUTING.md', 'BENCHMARKS.md', 'docs', 'packages', 'bench', 'test', 'examples', 'scripts']
    const found = roots
      .flatMap((name) => {
        const full = path.join(root, name)
        return name.includes('.') ? [full] : files(full)
      })
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .flatMap((line, index) => (ISSUE.test(line) ? [`${path.relative(root, file)}:${index + 1}: ${line.trim()}`] : [])),
      )
    expect(found).toEqual([])
  })
})
