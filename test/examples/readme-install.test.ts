/**
 * The README's install section stays true: it says the packages are ES modules ("type": "module"),
 * and its tarball recipe installs exactly what the CLI needs (its @signalbox dependencies, read
 * from packages/cli/package.json, and itself), packing every one of them.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'

const read = (file: string) => readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8')

function section(readme: string, heading: string): string {
  const start = readme.indexOf(`\n${heading}\n`)
  expect(start, `README.md has a "${heading}" section`).toBeGreaterThan(0)
  return readme.slice(start, readme.indexOf('\n## ', start + 1))
}

describe('README: Use it in your project', () => {
  const text = section(read('README.md'), '## Use it in your project')

  it('says the packages are ES modules and what package.json needs', () => {
    expect(text).toContain('"type": "module"')
    expect(text).toContain('npm pkg set type=module')
  })

  it("installs the CLI's tarballs together: its @signalbox dependencies and itself, each one packed first", () => {
    const cli = JSON.parse(read('packages/cli/package.json')) as { dependencies: Record<string, string> }
    const needed = [...Object.keys(cli.dependencies).filter((name) => name.startsWith('@signalbox/')), '@signalbox/cli']
      .map((name) => name.replace('@signalbox/', ''))
      .sort()
    const recipe = /```sh\n# in the clone[\s\S]*?```/.exec(text)?.[0] ?? ''
    const installed = [...recipe.matchAll(/\$P\/signalbox-([a-z-]+)-\d/g)].map(([, name]) => name as string).sort()
    expect(installed).toEqual(needed)
    const packed = /for p in ([a-z -]+); do/.exec(recipe)?.[1]?.split(' ') ?? []
    for (const name of needed) expect(packed).toContain(name)
  })
})
