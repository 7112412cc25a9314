/**
 * vitest global setup: the console's page script and chart layout are build outputs (pnpm build);
 * tests run the console from its sources, so they are brought up to date here, once, before any
 * test file runs (a few seconds when a page source or the agent machine changed, milliseconds
 * otherwise). A test never serves a stale page, and no test file spawns the bundler itself.
 */
import { agentChartGraph, pageAssets, staleness } from '@signalbox/console/internal'

export default async function setup(): Promise<void> {
  const stale = await staleness(agentChartGraph())
  const started = performance.now()
  await pageAssets()
  if (stale) console.log(`console assets rebuilt (${stale}) in ${Math.round(performance.now() - started)} ms`)
}
