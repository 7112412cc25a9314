/**
 * The page's script and the statechart's layout, built by `pnpm build` (scripts/build-assets.ts)
 * and shipped in `assets/`: the console reads them, it bundles and lays out nothing at run time.
 *
 * From the workspace's TypeScript sources (tests, `pnpm signalbox console`) the assets are checked
 * against what they were built from, and rebuilt when a source changed, so a stale page is never
 * served. The packed package has no sources: there the chart is only checked against the agent
 * machine of the installed @signalbox/core (another version may have other states).
 */
import { createHash } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { createAgent, ErrorCode, type Provider, ProviderError, SignalboxError } from '@signalbox/core'
import { type ChartGraph, type ChartLayout, chartGraph } from './chart-graph.ts'

export const ASSET_FILES = { script: 'app.js', chart: 'chart.json', inputs: 'inputs.json' } as const

/** What the assets were built from: file (relative to the package) → sha256 of its bytes. */
export interface AssetInputs {
  files: Record<string, string>
}

export interface PageAssets {
  script: string
  chart: ChartLayout
  /** Why the chart may not match the running agents (a packed console beside another core). */
  warning?: string
}

const PACKAGE_DIR = new URL('../', import.meta.url)
const ASSETS_DIR = new URL('assets/', PACKAGE_DIR)
/** Running from `src/*.ts` in the workspace, not from the built `dist/*.js`. */
const FROM_SOURCES = import.meta.url.endsWith('.ts')

let loaded: Promise<PageAssets> | undefined

/** The assets, read once per process (rebuilt first when running from changed sources). */
export function pageAssets(): Promise<PageAssets> {
  loaded ??= load()
  loaded.catch(() => {
    loaded = undefined
  })
  return loaded
}

async function load(): Promise<PageAssets> {
  const graph = agentChartGraph()
  if (FROM_SOURCES && (await staleness(graph)) !== undefined) {
    // A path the compiler does not follow: the builder (esbuild, elkjs) is a dev tool, never in dist.
    const builder = new URL('../scripts/build-assets.ts', import.meta.url).href
    const { buildAssets } = (await import(builder)) as { buildAssets(): Promise<{ script: string; chart: ChartLayout }> }
    return buildAssets()
  }
  let script: string
  let chart: ChartLayout
  try {
    ;[script, chart] = await Promise.all([
      readFile(new URL(ASSET_FILES.script, ASSETS_DIR), 'utf8'),
      readFile(new URL(ASSET_FILES.chart, ASSETS_DIR), 'utf8').then((text) => JSON.parse(text) as ChartLayout),
    ])
  } catch (error) {
    throw new SignalboxError(
      ErrorCode.INTERNAL_ERROR,
      `the console's page assets are missing from ${fileURLToPath(ASSETS_DIR)} (they are made by pnpm build): ${(error as Error).message}`,
      { cause: error },
    )
  }
  return chart.key === graph.key
    ? { script, chart }
    : {
        script,
        chart,
        warning:
          "the statechart was drawn for another version of @signalbox/core's agent machine: install matching @signalbox/console and @signalbox/core versions",
      }
}

/**
 * Why the assets built in `packageDir` do not match what they were built from (undefined: they
 * do): not built, the agent machine's graph changed, or a file they were built from changed.
 */
export async function staleness(graph: ChartGraph, packageDir: URL = PACKAGE_DIR): Promise<string | undefined> {
  const assets = new URL('assets/', packageDir)
  let inputs: AssetInputs
  let key: string
  try {
    inputs = JSON.parse(await readFile(new URL(ASSET_FILES.inputs, assets), 'utf8')) as AssetInputs
    key = (JSON.parse(await readFile(new URL(ASSET_FILES.chart, assets), 'utf8')) as ChartLayout).key
    await readFile(new URL(ASSET_FILES.script, assets))
  } catch {
    return 'not built'
  }
  if (key !== graph.key) return 'the agent machine changed'
  const changes = await Promise.all(
    Object.entries(inputs.files).map(([file, hash]) =>
      hashFile(file, packageDir).then(
        (now) => (now === hash ? undefined : `${file} changed`),
        () => `${file} is gone`,
      ),
    ),
  )
  return changes.find((change) => change !== undefined)
}

/** sha256 of a file of the package (`file` relative to it). */
export async function hashFile(file: string, packageDir: URL = PACKAGE_DIR): Promise<string> {
  return createHash('sha256')
    .update(await readFile(new URL(file, packageDir)))
    .digest('hex')
}

/** The agent machine's graph: the same for every agent (one machine), so read once per process. */
let graph: ChartGraph | undefined
export function agentChartGraph(): ChartGraph {
  const provider: Provider = {
    model: 'none',
    complete: async () => {
      throw new ProviderError('the console never calls the model', { retryable: false })
    },
  }
  graph ??= chartGraph(createAgent({ id: 'console', provider }).machine)
  return graph
}
