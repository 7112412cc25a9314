/**
 * The load hook of `register.mjs`: a `.ts` file under the repository is compiled to ESM by esbuild
 * (types stripped, `verbatimModuleSyntax` as in tsconfig.json) and cached by path and content in
 * `node_modules/.cache/signalbox-ts-loader`, so a process whose files are all cached never starts
 * esbuild. Anything else goes to Node's own loader.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../../..', import.meta.url))
const CACHE = path.join(ROOT, 'node_modules/.cache/signalbox-ts-loader')
const TYPESCRIPT = /\.m?ts$/
const OPTIONS = { loader: 'ts', format: 'esm', target: 'node20', sourcemap: 'inline' }
const TSCONFIG = { compilerOptions: { verbatimModuleSyntax: true } }

/** @type {Promise<typeof import('esbuild')> | undefined} */
let esbuild

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:')) return nextLoad(url, context)
  const file = fileURLToPath(url)
  if (!TYPESCRIPT.test(file) || file.includes(`${path.sep}node_modules${path.sep}`)) return nextLoad(url, context)
  const source = readFileSync(file, 'utf8')
  const key = createHash('sha1').update(file).update('\0').update(source).digest('hex')
  const cached = path.join(CACHE, `${key}.mjs`)
  let code
  try {
    code = readFileSync(cached, 'utf8')
  } catch {
    esbuild ??= import('esbuild')
    const result = await (await esbuild).transform(source, { ...OPTIONS, sourcefile: file, tsconfigRaw: TSCONFIG })
    code = result.code
    mkdirSync(CACHE, { recursive: true })
    // Processes started at once compile the same file: each writes its own temporary, the rename is atomic.
    const temporary = `${cached}.${process.pid}.tmp`
    writeFileSync(temporary, code)
    renameSync(temporary, cached)
  }
  return { format: 'module', source: code, shortCircuit: true }
}
