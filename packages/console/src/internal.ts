/**
 * `@signalbox/console/internal`: the page's build step, for signalbox's own build and tests.
 * Not part of the public API (unstable: names here may change in any release).
 */
export { agentChartGraph, pageAssets, staleness } from './page-assets.ts'
