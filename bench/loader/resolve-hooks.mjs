/**
 * Module resolve hooks: `@signalbox/<package>[/<entry>]` resolves to that package's BUILT entry
 * (`packages/<package>/dist/...`, as its `publishConfig.exports` says: what users install), not to
 * its TypeScript sources. Registered by `use-dist.mjs`; the bench's own files still run through tsx.
 */
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const packages = new URL('../../packages/', import.meta.url)
const SPECIFIER = /^@signalbox\/([a-z0-9-]+)(\/[a-z0-9-/]+)?$/
const entries = new Map()

/** The built file of `@signalbox/<name><entry>`, or undefined when the package has no such entry. */
function builtEntry(name, entry) {
  const key = `${name}${entry}`
  if (entries.has(key)) return entries.get(key)
  const manifestUrl = new URL(`${name}/package.json`, packages)
  let url
  if (existsSync(manifestUrl)) {
    const manifest = JSON.parse(readFileSync(manifestUrl, 'utf8'))
    const target = manifest.publishConfig?.exports?.[`.${entry}`]
    const file = typeof target === 'string' ? target : target?.import
    if (typeof file === 'string') {
      url = new URL(file, new URL(`${name}/`, packages))
      if (!existsSync(url))
        throw new Error(`${fileURLToPath(url)} is missing: build the packages first (\`pnpm build\`, which \`pnpm bench\` runs).`)
    }
  }
  entries.set(key, url)
  return url
}

export async function resolve(specifier, context, nextResolve) {
  const match = SPECIFIER.exec(specifier)
  const url = match ? builtEntry(match[1], match[2] ?? '') : undefined
  if (url === undefined) return nextResolve(specifier, context)
  return { url: url.href, format: 'module', shortCircuit: true }
}
