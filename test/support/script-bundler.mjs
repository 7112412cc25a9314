/**
 * `node script-bundler.mjs <script.ts> <out.mjs> <built|sources>`: bundles a TypeScript script for
 * `script-build.ts`, which runs it as a child because esbuild takes plugins only in its
 * asynchronous API and the suite asks for a script's command line synchronously. Writes the
 * bundle and, beside it, `<out>.json`: the sha1 of every source file in it (and of the bundler and
 * the lockfile), so a stale bundle is seen without starting esbuild. Both written to a temporary, then renamed: workers that compile
 * the same script at once each write whole files.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { build } from 'esbuild'

const [script, out, packages] = process.argv.slice(2)
if (!script || !out || (packages !== 'built' && packages !== 'sources')) {
  console.error('usage: node script-bundler.mjs <script.ts> <out.mjs> <built|sources>')
  process.exit(2)
}

/** @type {Record<string, string>} */
const inputs = {}
// A change to how bundles are made makes every bundle stale, and so does one to the installed
// packages (a bundle's imports name the files they resolved to).
const self = fileURLToPath(import.meta.url)
for (const file of [self, path.resolve(path.dirname(self), '../../pnpm-lock.yaml')])
  inputs[file] = createHash('sha1').update(readFileSync(file, 'utf8')).digest('hex')
const result = await build({
  entryPoints: [script],
  bundle: true,
  platform: 'node',
  // `built`: the workspace's packages resolve to their build and stay imports; `sources`: to their
  // TypeScript sources, which are then bundled (one copy of each).
  conditions: packages === 'built' ? ['signalbox-built'] : [],
  format: 'esm',
  target: 'node20',
  sourcemap: 'inline',
  write: false,
  logLevel: 'silent',
  outfile: out,
  tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
  // The process runs the script, as far as it can tell (an entry check compares its own URL with it).
  banner: { js: `process.argv[1] = ${JSON.stringify(path.resolve(script))}` },
  plugins: [
    {
      // A package stays an import, except one whose entry is TypeScript (a workspace package's
      // sources: plain node could not load it), and the import names the file esbuild resolved from
      // the importing file: a bundled file from another package resolves its own dependencies.
      name: 'packages-as-imports',
      setup(b) {
        b.onResolve({ filter: /^[^./]/ }, async (args) => {
          if (args.pluginData === 'resolving' || args.path.startsWith('node:')) return undefined
          const found = await b.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: 'resolving' })
          // Not found here (an optional peer): left to Node, as written.
          if (found.errors.length > 0 || found.external || found.path === '') return { path: args.path, external: true }
          if (/\.[cm]?ts$/.test(found.path) && !found.path.endsWith('.d.ts')) return { path: found.path }
          return { path: pathToFileURL(found.path).href, external: true }
        })
      },
    },
    {
      // Each file keeps its own `import.meta.url`, `dirname` and `filename`: in a bundle they would
      // all be the bundle's.
      name: 'own-paths',
      setup(b) {
        b.onLoad({ filter: /\.[cm]?[jt]s$/ }, (args) => {
          const source = readFileSync(args.path, 'utf8')
          inputs[args.path] = createHash('sha1').update(source).digest('hex')
          const contents = source
            .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
            .replaceAll('import.meta.dirname', JSON.stringify(path.dirname(args.path)))
            .replaceAll('import.meta.filename', JSON.stringify(args.path))
          return { contents, loader: /\.[cm]?ts$/.test(args.path) ? 'ts' : 'js' }
        })
      },
    },
  ],
})
const file = result.outputFiles.find((f) => f.path === out)
if (!file) throw new Error(`bundling ${script} left no ${out}`)
mkdirSync(path.dirname(out), { recursive: true })
const temporary = `${out}.${process.pid}.tmp`
writeFileSync(temporary, file.contents)
renameSync(temporary, out)
writeFileSync(`${temporary}.json`, JSON.stringify({ packages, inputs }))
renameSync(`${temporary}.json`, `${out}.json`)
