/**
 * Every command that connects takes the `nats` CLI's connection flags and variables. Against a
 * private nats-server that requires a password, and one that speaks only TLS.
 */
import path from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { type ConfigServer, makeCertificates, startConfigServer } from '../support/nats-config-server.ts'
import { cleanupAll, runCli, startProcess } from './support.ts'

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

  it('credentials inside --nats (nats://user:pass@host, nats://token@host) log in; the secret is masked in what is printed', async () => {
    const s = await startConfigServer(() => 'authorization: { users: [ { user: sbx, password: "s3cret-url-pw" } ] }')
    servers.push(s)
    const withUser = s.url.replace('//', '//sbx:s3cret-url-pw@')
    const ok = await runCli(['audit', '--nats', withUser])
    expect(ok.stdout).toContain('no audit entries')
    expect(ok.code).toBe(0)
    // A command that names the server says where, without the password.
    const watch = startProcess(['watch', '--nats', withUser], { name: 'watch' })
    await watch.waitFor('watching')
    expect(watch.output).toContain(`nats://sbx:***@127.0.0.1:${s.port}`)
    expect(await watch.stop('SIGTERM')).toBe(0)
    expect(watch.output).not.toContain('s3cret-url-pw')
    const wrong = await runCli(['audit', '--nats', s.url.replace('//', '//sbx:wrong-url-pw@')])
    expect(wrong.code).toBe(1)
    expect(wrong.stderr).toContain('error [NATS_AUTHORIZATION_VIOLATION]')
    expect(wrong.stderr).toContain('nats://sbx:***@')
    expect(wrong.output).not.toContain('wrong-url-pw')

    const t = await startConfigServer(() => 'authorization: { token: "tok3n-in-url" }')
    servers.push(t)
    const token = await runCli(['audit', '--nats', t.url.replace('//', '//tok3n-in-url@')])
    expect(token.stdout).toContain('no audit entries')
    expect(token.code).toBe(0)
    const badToken = await runCli(['audit', '--nats', t.url.replace('//', '//not-the-tok3n@')])
    expect(badToken.code).toBe(1)
    expect(badToken.stderr).toContain('nats://***@')
    expect(badToken.output).not.toContain('not-the-tok3n')
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
