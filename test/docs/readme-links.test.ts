import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

// A doc no one can find from the README is a doc no one reads.
const root = join(import.meta.dirname, '..', '..')
const readme = readFileSync(join(root, 'README.md'), 'utf8')

describe('README', () => {
  it('links every document under docs/ and the benchmarks', () => {
    const docs = readdirSync(join(root, 'docs'))
      .filter((name) => name.endsWith('.md'))
      .map((name) => `docs/${name}`)
    const unlinked = [...docs, 'BENCHMARKS.md'].filter((path) => !readme.includes(`](${path})`))
    expect(unlinked).toEqual([])
  })
})
