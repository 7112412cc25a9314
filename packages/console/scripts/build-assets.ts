/**
 * Builds the console's page assets (part of `pnpm build`): the page script bundled from
 * `src/page/main.ts` by esbuild, and the agent statechart laid out by ELK. The package ships them
 * (assets/); at run time the console only reads them, so neither esbuild nor elkjs is a dependency.
 *
 * `assets/inputs.json` records a hash of every file the two were built from (the page's sources
 * and the parts of zod it bundles, this script and the layout), so a console running from the
 * workspace's sources can tell a stale build and rebuild it (see src/page-assets.ts).
 *
 *   tsx packages/console/scripts/build-assets.ts            builds them when an input changed
 *   tsx packages/console/scripts/build-assets.ts --force    builds them anyway
 */
import { mkdir, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ChartLayout } from '../src/chart-graph.ts'
import { ASSET_FILES, type AssetInputs, agentChartGraph, hashFile, staleness } from '../src/page-assets.ts'

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url))
/** Files the build depends on besides what esbuild reads (relative to the package). */
const BUILDER_FILES = ['scripts/build-assets.ts', 'scripts/chart-layout.ts', 'src/chart-graph.ts']

export interface BuiltAssets {
  script: string
  chart: ChartLayout
}

/** Builds both assets and writes them (each file replaced whole, so a reader never sees half of one). */
export async function buildAssets(): Promise<BuiltAssets> {
  // Loaded here, not at the top: a build that finds the assets current needs neither.
  const [{ build }, { layoutChart }] = await Promise.all([import('esbuild'), import('./chart-layout.ts')])
  const [bundle, chart] = await Promise.all([
    build({
      absWorkingDir: PACKAGE_DIR,
      entryPoints: ['src/page/main.ts'],
      bundle: true,
      write: false,
      metafile: true,
      format: 'esm',
      target: 'es2022',
      minify: true,
      legalComments: 'none',
      logLevel: 'silent',
    }),
    layoutChart(agentChartGraph()),
  ])
  const script = bundle.outputFiles[0]?.text
  if (script === undefined) throw new Error('esbuild produced no page script')
  const files = [...Object.keys(bundle.metafile.inputs), ...BUILDER_FILES].sort()
  const inputs: AssetInputs = {
    files: Object.fromEntries(await Promise.all(files.map(async (file) => [file, await hashFile(file)]))),
  }
  const dir = path.join(PACKAGE_DIR, 'assets')
  await mkdir(dir, { recursive: true })
  await replace(path.join(dir, ASSET_FILES.script), script)
  await replace(path.join(dir, ASSET_FILES.chart), JSON.stringify(chart))
  // Last: the record that says the two above are current.
  await replace(path.join(dir, ASSET_FILES.inputs), `${JSON.stringify(inputs, null, 1)}\n`)
  return { script, chart }
}

async function replace(file: string, text: string): Promise<void> {
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`
  await writeFile(temporary, text)
  await rename(temporary, file)
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const started = performance.now()
  // Every build of the workspace (the suite's setup, each package test, the bench) runs this: the
  // recorded input hashes make a build with nothing changed a read of those files.
  const stale = process.argv.includes('--force') ? 'forced' : await staleness(agentChartGraph())
  if (stale === undefined) {
    console.log(`console assets: current (${Math.round(performance.now() - started)} ms)`)
    process.exit(0)
  }
  const built = await buildAssets()
  console.log(
    `console assets: app.js ${(built.script.length / 1024).toFixed(0)} KiB, chart ${built.chart.nodes.length} states ${built.chart.edges.length} edges (${Math.round(performance.now() - started)} ms)`,
  )
}
