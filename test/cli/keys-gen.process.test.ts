/**
 * A key from `signalbox keys gen` is what a nats-server nkey user and the signing flags take: the
 * public key goes in the server's authorization block, the seed file logs a command in (--nkey).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type ConfigServer, startConfigServer } from '../support/nats-config-server.ts'
import { cleanupAll, runCli } from './support.ts'

let server: ConfigServer | undefined
let dir: string | undefined
afterAll(async () => {
  await cleanupAll()
  await server?.dispose()
  if (dir) await rm(dir, { recursive: true, force: true })
})

describe('signalbox keys gen', () => {
  it('makes a user that a nats-server with nkey users lets in (--nkey seed file), and no one else', async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'signalbox-keys-'))
    const seedFile = path.join(dir, 'alice.nk')
    const made = await runCli(['keys', 'gen', '--out', seedFile])
    expect(made.code, made.output).toBe(0)
    const publicKey = made.stdout.trim()
    server = await startConfigServer(() => `authorization: { users: [ { nkey: ${publicKey} } ] }`)

    const admitted = await runCli(['audit', '--nats', server.url, '--nkey', seedFile])
    expect(admitted.code, admitted.output).toBe(0)
    expect(admitted.stdout).toContain('no audit entries')

    const other = path.join(dir, 'mallory.nk')
    expect((await runCli(['keys', 'gen', '--out', other])).code).toBe(0)
    const out = await runCli(['audit', '--nats', server.url, '--nkey', other])
    expect(out.code).toBe(1)
    expect(out.stderr).toContain('error [NATS_AUTHORIZATION_VIOLATION]')
  })
})
