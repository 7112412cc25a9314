/**
 * The page's script, bundled from `page/main.ts` by esbuild when the console starts: no build
 * step to forget, no asset from a CDN, and the page code stays TypeScript checked with the rest.
 */
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { ErrorCode, SignalboxError } from '@signalbox/core'
import { build } from 'esbuild'

let cached: Promise<string> | undefined

export function pageScript(): Promise<string> {
  cached ??= build({
    entryPoints: [pageEntry()],
    bundle: true,
    write: false,
    format: 'esm',
    target: 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'silent',
  }).then((result) => {
    const file = result.outputFiles[0]
    if (!file) throw new SignalboxError(ErrorCode.INTERNAL_ERROR, 'esbuild produced no page script')
    return file.text
  })
  cached.catch(() => {
    cached = undefined
  })
  return cached
}

/** `page/main.ts` beside this module in the workspace; in the packed package `dist/` ships beside `src/page`. */
function pageEntry(): string {
  const beside = fileURLToPath(new URL('./page/main.ts', import.meta.url))
  return existsSync(beside) ? beside : fileURLToPath(new URL('../src/page/main.ts', import.meta.url))
}
