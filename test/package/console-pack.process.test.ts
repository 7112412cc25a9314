/**
 * The console as packed: its page script and statechart layout ship as built assets, so the
 * tarball carries no TypeScript sources and the console depends on neither a bundler (esbuild)
 * nor a layout engine (elkjs). The built module reads the assets as they are.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildPackages } from '../support/built.ts'
import { mustRun, ROOT, stopCommands } from './installed.ts'

const CONSOLE = path.join(ROOT, 'packages', 'console')
let base: string
let files: string[]
let manifest: { dependencies?: Record<string, string>; peerDependencies?: Record<string, string>; files?: string[] }

beforeAll(async () => {
  // The workspace's build (as the other package tests run it): every package, then the console's assets.
  base = await mkdtemp(path.join(tmpdir(), 'signalbox-console-pack-'))
  await buildPackages()
  await mustRun('pnpm', ['pack', '--pack-destination', base], { cwd: CONSOLE })
  const tarball = (await mustRun('sh', ['-c', 'ls *.tgz'], { cwd: base })).stdout.trim()
  files = (await mustRun('tar', ['tzf', tarball], { cwd: base })).stdout
    .trim()
    .split('\n')
    .map((f) => f.replace(/^package\//, ''))
  await mustRun('tar', ['xzf', tarball, 'package/package.json'], { cwd: base })
  manifest = JSON.parse(await readFile(path.join(base, 'package', 'package.json'), 'utf8'))
}, 400_000)

afterAll(async () => {
  stopCommands()
  if (base) await rm(base, { recursive: true, force: true })
})

describe('@signalbox/console as packed', () => {
  it('ships the built page and chart, and no TypeScript sources', () => {
    expect(files).toContain('assets/app.js')
    expect(files).toContain('assets/chart.json')
    expect(files).toContain('dist/index.js')
    expect(files).toContain('dist/page-assets.js')
    expect(files.filter((f) => /\.[cm]?tsx?$/.test(f) && !/\.d\.[cm]?ts$/.test(f))).toEqual([])
    expect(files.filter((f) => f.startsWith('src/') || f.startsWith('scripts/'))).toEqual([])
  })

  it('depends on neither esbuild nor elkjs', () => {
    const needed = { ...manifest.dependencies, ...manifest.peerDependencies }
    expect(Object.keys(needed)).not.toContain('esbuild')
    expect(Object.keys(needed)).not.toContain('elkjs')
    expect(Object.keys(needed).sort()).toEqual(['@signalbox/actors', '@signalbox/core', 'zod'])
  })

  it('the built module serves the shipped assets without rebuilding them', async () => {
    const built = (await import(path.join(CONSOLE, 'dist', 'page-assets.js'))) as typeof import('@signalbox/console/internal')
    const assets = await built.pageAssets()
    expect(assets.script).toBe(await readFile(path.join(CONSOLE, 'assets', 'app.js'), 'utf8'))
    expect(assets.chart).toEqual(JSON.parse(await readFile(path.join(CONSOLE, 'assets', 'chart.json'), 'utf8')))
    // Built with this workspace's core: the chart is the running machine's.
    expect(assets.warning).toBeUndefined()
    expect(assets.script).not.toMatch(/\bfrom\s*["']esbuild["']|elkjs/)
  })
})
