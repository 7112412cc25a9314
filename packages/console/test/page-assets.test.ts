/**
 * The page script and the chart are built assets: from the workspace's sources the console checks
 * them against what they were built from and rebuilds a stale build, so a test never runs an old page.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { describe, expect, it, onTestFinished } from 'vitest'
import { agentChartGraph, hashFile, pageAssets, staleness } from '../src/page-assets.ts'

describe('page assets', () => {
  it('from the sources, are current: a stale or missing build is rebuilt before it is served', async () => {
    const assets = await pageAssets()
    expect(assets.chart.key).toBe(agentChartGraph().key)
    expect(assets.warning).toBeUndefined()
    expect(assets.script).toMatch(/EventSource/)
    expect(assets.chart.nodes.find((n) => n.id === 'running.turn.toolCalls.awaitingApproval')).toMatchObject({
      width: expect.any(Number),
      height: expect.any(Number),
    })
    await expect(staleness(agentChartGraph())).resolves.toBeUndefined()
  })

  it('says why a build is stale: not built, another machine, a source changed or gone', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'signalbox-console-assets-'))
    onTestFinished(() => rm(dir, { recursive: true, force: true }))
    const root = pathToFileURL(`${dir}/`)
    const graph = agentChartGraph()
    await mkdir(path.join(dir, 'assets'))
    await mkdir(path.join(dir, 'src'))
    await writeFile(path.join(dir, 'src', 'main.ts'), 'export const page = 1\n')
    await expect(staleness(graph, root)).resolves.toBe('not built')

    await writeFile(path.join(dir, 'assets', 'app.js'), 'built')
    await writeFile(path.join(dir, 'assets', 'chart.json'), JSON.stringify({ key: graph.key }))
    const inputs = { files: { 'src/main.ts': await hashFile('src/main.ts', root) } }
    await writeFile(path.join(dir, 'assets', 'inputs.json'), JSON.stringify(inputs))
    await expect(staleness(graph, root)).resolves.toBeUndefined()

    await expect(staleness({ ...graph, key: 'another machine' }, root)).resolves.toBe('the agent machine changed')
    await writeFile(path.join(dir, 'src', 'main.ts'), 'export const page = 2\n')
    await expect(staleness(graph, root)).resolves.toBe('src/main.ts changed')
    await rm(path.join(dir, 'src', 'main.ts'))
    await expect(staleness(graph, root)).resolves.toBe('src/main.ts is gone')
  })
})
