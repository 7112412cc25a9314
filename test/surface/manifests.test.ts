/**
 * What the published packages ask npm for: ranges, not exact pins (the lockfile is what keeps CI
 * reproducible: `pnpm install --frozen-lockfile` in .ci/run), xstate as a peer of the packages
 * whose types expose it, and @statelyai/inspect only as an optional peer.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { describe, expect, it } from 'vitest'
import { ROOT } from './entry-points.ts'

interface Manifest {
  name: string
  private?: boolean
  dependencies?: Record<string, string>
  peerDependencies?: Record<string, string>
  peerDependenciesMeta?: Record<string, { optional?: boolean }>
  devDependencies?: Record<string, string>
}

const manifests: Manifest[] = readdirSync(path.join(ROOT, 'packages')).map(
  (dir) => JSON.parse(readFileSync(path.join(ROOT, 'packages', dir, 'package.json'), 'utf8')) as Manifest,
)
const byName = (name: string) => manifests.find((m) => m.name === name) as Manifest

describe('the published manifests', () => {
  it('ask for ranges, not exact versions', () => {
    const exact = manifests.flatMap((m) =>
      Object.entries({ ...m.dependencies, ...m.peerDependencies })
        .filter(([, range]) => /^\d/.test(range))
        .map(([dep, range]) => `${m.name}: ${dep}@${range}`),
    )
    expect(exact).toEqual([])
  })

  it('make xstate a peer of the packages whose types expose it (the workspace gets it as a dev dependency)', () => {
    for (const name of ['@signalbox/core', '@signalbox/actors']) {
      const m = byName(name)
      expect(m.peerDependencies?.xstate, name).toMatch(/^\^5\./)
      expect(m.dependencies ?? {}, name).not.toHaveProperty('xstate')
      expect(m.devDependencies?.xstate, name).toBe(m.peerDependencies?.xstate)
    }
    // The command is an application: it brings the xstate it runs on.
    expect(byName('@signalbox/cli').dependencies?.xstate).toMatch(/^\^5\./)
  })

  it('need @statelyai/inspect only as an optional peer', () => {
    for (const m of manifests) expect(m.dependencies ?? {}, m.name).not.toHaveProperty('@statelyai/inspect')
    for (const name of ['@signalbox/actors', '@signalbox/cli']) {
      expect(byName(name).peerDependencies?.['@statelyai/inspect'], name).toBe('^0.7.2')
      expect(byName(name).peerDependenciesMeta?.['@statelyai/inspect'], name).toEqual({ optional: true })
    }
  })
})
