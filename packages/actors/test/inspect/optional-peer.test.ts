/**
 * `@statelyai/inspect` is an optional peer dependency: loading it goes through one function that
 * turns "not installed" into `INSPECTOR_UNAVAILABLE` with the install command, and passes any other
 * failure on unchanged. (The packed install without it is checked in test/package/consumer.test.ts.)
 */
import { SignalboxError } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { importOptionalPeer, loadStatelyClient, loadStatelyServer, STATELY_INSPECT_PEER } from '../../src/inspect/stately.ts'

describe('the optional peer @statelyai/inspect', () => {
  it('a peer that is not installed is INSPECTOR_UNAVAILABLE, naming the package and the range to install', async () => {
    const peer = { name: '@signalbox-absent/inspect', range: '^9.1.0' }
    const error = await importOptionalPeer(`${peer.name}/server`, peer).catch((e: unknown) => e)
    expect(SignalboxError.is(error, 'INSPECTOR_UNAVAILABLE')).toBe(true)
    expect(error).toMatchObject({ fault: 'user', details: { package: peer.name } })
    expect((error as Error).message).toContain('npm install @signalbox-absent/inspect@"^9.1.0"')
    expect(((error as Error).cause as { code?: string }).code).toBe('ERR_MODULE_NOT_FOUND')
  })

  it('any other import failure is passed on as it is', async () => {
    const error = await importOptionalPeer('node:no-such-builtin').catch((e: unknown) => e)
    expect(SignalboxError.is(error)).toBe(false)
    expect((error as { code?: string }).code).toBe('ERR_UNKNOWN_BUILTIN_MODULE')
  })

  it('installed (as in this workspace), both halves load, once', async () => {
    expect(STATELY_INSPECT_PEER.name).toBe('@statelyai/inspect')
    const client = await loadStatelyClient()
    expect(typeof client.createWebSocketInspector).toBe('function')
    expect(await loadStatelyClient()).toBe(client)
    expect(typeof (await loadStatelyServer()).createInspectorServer).toBe('function')
  })

  it('the range it asks for is the one @signalbox/actors declares', async () => {
    const { default: manifest } = await import('../../package.json', { with: { type: 'json' } })
    expect(manifest.peerDependencies['@statelyai/inspect']).toBe(STATELY_INSPECT_PEER.range)
    expect(manifest.peerDependenciesMeta['@statelyai/inspect']).toEqual({ optional: true })
    expect(manifest.dependencies).not.toHaveProperty('@statelyai/inspect')
  })
})
