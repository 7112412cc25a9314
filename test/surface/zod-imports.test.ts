/**
 * signalbox reads a user's schemas with the user's zod, 3.25 or 4 (a peer dependency), so its own
 * code imports only the subpaths both majors ship: `zod/v4` and `zod/v4/core`. A bare `'zod'` is
 * zod 3 on a zod 3.25 install, and mixing it with the protocol's zod 4 schemas throws when the
 * package loads (test/package/consumer.test.ts shows it end to end; this finds it in a second).
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './entry-points.ts'

describe("the packages' zod imports", () => {
  it('are zod/v4 or zod/v4/core only', () => {
    const offenders = readdirSync(path.join(ROOT, 'packages')).flatMap((pkg) => {
      const src = path.join(ROOT, 'packages', pkg, 'src')
      return readdirSync(src, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.ts'))
        .flatMap((f) =>
          [...readFileSync(path.join(src, f), 'utf8').matchAll(/from '(zod(?:\/[^']*)?)'/g)]
            .map((m) => m[1] as string)
            .filter((specifier) => specifier !== 'zod/v4' && specifier !== 'zod/v4/core')
            .map((specifier) => `packages/${pkg}/src/${f}: ${specifier}`),
        )
    })
    expect(offenders).toEqual([])
  })
})
