/**
 * Every command that connects takes the `nats` CLI's connection flags and variables. Against a
 * private nats-server that requires a password, and one that speaks only TLS.
 */
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type ConfigServer, makeCertificates, startConfigServer } from '../support/nats-config-server.ts'
import { cleanupAll, runCli } from './support.ts'

const servers: ConfigServer[] = []
afterAll(async () => {
  await cleanupAll()
  for (const server of servers) await server.dispose()
})

describe('connection flags', () => {
  it('--user/--password and NATS_USER/NATS_PASSWORD log in; a wrong password names the user, never the password', async () => {
    const s = await startConfigServer(() => 'authorization: { users: [ { user: alice, password: "right-pw-1" } ] }')
    servers.push(s)
    const ok = await runCli(['audit', '--server', s.url, '--user', 'alice', '--password', 'right-pw-1'])
    expect(ok.stdout).toContain('no audit entries')
    expect(ok.code).toBe(0)
    const fromEnv = await runCli(['audit'], { env: { NATS_URL: s.url, NATS_USER: 'alice', NATS_PASSWORD: 'right-pw-1' } })
    expect(fromEnv.code).toBe(0)
    const wrong = await runCli(['audit', '--nats', s.url, '--user', 'alice', '--password', 'wrong-pw-2'])
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain('error [NATS_AUTHORIZATION_VIOLATION]')
    expect(wrong.stderr).toContain('user "alice"')
    expect(wrong.output).not.toContain('wrong-pw-2')
  })

  it('a TLS server without --tlsca is a certificate problem, with it the command works', async () => {
    const s = await startConfigServer((dir) => {
      const { cert, key } = makeCertificates(dir)
      return `tls: { cert_file: ${JSON.stringify(cert)}, key_file: ${JSON.stringify(key)} }`
    })
    servers.push(s)
    const failed = await runCli(['audit', '--nats', s.url])
    expect(failed.code).toBe(1)
    expect(failed.stderr).toContain('error [NATS_TLS_FAILED]')
    expect(failed.stderr).toContain('certificate problem')
    const ok = await runCli(['audit', '--nats', s.url, '--tlsca', path.join(s.dir, 'ca.pem')])
    expect(ok.stdout).toContain('no audit entries')
    expect(ok.code).toBe(0)
  })
})
