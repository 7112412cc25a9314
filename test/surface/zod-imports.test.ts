/**
 * One import strategy for zod across the packages: `zod/v4` (or `zod/v4/core` for types), which
 * both zod 3.25+ and zod 4 provide. A bare `'zod'` is zod 3's API in an app on zod 3.25, and a
 * schema built with it cannot mix with the protocol's zod 4 schemas (the consumer test on zod 3.25
 * catches it only after a build and an install; this catches it at once).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './entry-points.ts'
import { packageSources } from './package-sources.ts'

describe('zod imports in the packages', () => {
  it('every package source imports zod as zod/v4 or zod/v4/core', () => {
    const bare = packageSources()
      .filter((file) => /from ['"]zod['"]/.test(readFileSync(file, 'utf8')))
      .map((file) => path.relative(ROOT, file))
    expect(bare).toEqual([])
  })
})
