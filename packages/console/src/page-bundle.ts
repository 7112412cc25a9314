/**
 * The page's script, bundled from `page/main.ts` by esbuild when the console starts: no build
 * step to forget, no asset from a CDN, and the page code stays TypeScript checked with the rest.
 */
import { fileURLToPath } from 'node:url'
import { build } from 'esbuild'

let cached: Promise<string> | undefined

export function pageScript(): Promise<string> {
  cached ??= build({
    entryPoints: [fileURLToPath(new URL('./page/main.ts', import.meta.url))],
    bundle: true,
    write: false,
    format: 'esm',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  }).then((result) => {
    const file = result.outputFiles[0]
    if (!file) throw new Error('esbuild produced no page script')
    return file.text
  })
  cached.catch(() => {
    cached = undefined
  })
  return cached
}
