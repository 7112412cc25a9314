/**
 * Credentials the way the `nats` CLI takes them, against private nats-servers that require them:
 * user/password, token, nkey, creds (operator mode, JWTs signed here with nkeys), TLS with a CA
 * made by openssl. A refused connection says which credential and why, and never the secret.
 */
import { createHash, randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import path from 'node:path'
import { createAccount, createOperator, createUser, type KeyPair } from '@nats-io/nkeys'
import { connect } from '@nats-io/transport-node'
import {
  connectNatsBus,
  mergeCredentials,
  type NatsBus,
  NatsConnectError,
  type NatsCredentialOptions,
  NatsCredentialsError,
  natsCredentialsFromEnv,
} from '@signalbox/actors/nats'
import { afterAll, describe, expect, it } from 'vitest'
import { type ConfigServer, makeCertificates, startConfigServer } from '../../../../test/support/nats-config-server.ts'
import { freePort } from '../../../../test/support/nats-server.ts'
import { classifyConnectError } from '../../src/nats/connect-errors.ts'
import { natsConnectOptions, serverList } from '../../src/nats/credentials.ts'

const servers: ConfigServer[] = []
const buses: NatsBus[] = []
afterAll(async () => {
  for (const bus of buses) await bus.close()
  for (const server of servers) await server.dispose()
})

async function server(config: (dir: string) => string, options?: { jetstream?: boolean }): Promise<ConfigServer> {
  const started = await startConfigServer(config, options)
  servers.push(started)
  return started
}

/** Connects the bus (with its JetStream stream), or returns the error it failed with. */
async function tryBus(url: string, credentials: NatsCredentialOptions): Promise<NatsBus | Error> {
  try {
    const bus = await connectNatsBus({
      servers: url,
      credentials,
      prefix: `t${randomBytes(4).toString('hex')}.v1`,
      signal: AbortSignal.timeout(8_000),
    })
    buses.push(bus)
    return bus
  } catch (error) {
    return error as Error
  }
}

function expectRefused(result: NatsBus | Error, code: string, secret?: string): NatsConnectError {
  expect(result).toBeInstanceOf(NatsConnectError)
  const error = result as NatsConnectError
  expect(error.code).toBe(code)
  if (secret !== undefined) {
    expect(error.message).not.toContain(secret)
    expect(JSON.stringify(error.details)).not.toContain(secret)
  }
  return error
}

const seedText = (pair: KeyPair) => new TextDecoder().decode(pair.getSeed())

describe('user and password', () => {
  it('connects with the right password; a wrong one is an authorization error naming the user, not the password', async () => {
    const s = await server(() => 'authorization: { users: [ { user: alice, password: "s3cret-pw" } ] }')
    const bus = await tryBus(s.url, { user: 'alice', password: 's3cret-pw' })
    expect(bus).not.toBeInstanceOf(Error)
    const error = expectRefused(
      await tryBus(s.url, { user: 'alice', password: 'wrong-pw-123' }),
      'NATS_AUTHORIZATION_VIOLATION',
      'wrong-pw-123',
    )
    expect(error.message).toContain('user "alice"')
    expect(error.message).toContain('authorization violation')
    // The secret in a URL is not repeated either.
    const inUrl = expectRefused(
      await tryBus(s.url.replace('//', '//alice:url-pw-456@'), {}),
      'NATS_AUTHORIZATION_VIOLATION',
      'url-pw-456',
    )
    expect(inUrl.message).toContain('***@127.0.0.1')
  })
})

describe('credentials in the server URL, as the nats CLI takes them', () => {
  it('nats://user:password@host and nats://token@host log in; the secret is masked in every error', async () => {
    const users = await server(() => 'authorization: { users: [ { user: sbx, password: "s3cret-in-url" } ] }')
    const withUser = users.url.replace('//', '//sbx:s3cret-in-url@')
    const bus = await tryBus(withUser, {})
    expect(bus).not.toBeInstanceOf(Error)
    // The servers option of connectNatsBus itself, not only `credentials.servers`.
    const direct = await connectNatsBus({ servers: withUser, prefix: `t${randomBytes(4).toString('hex')}.v1` })
    buses.push(direct)
    expect(direct.connection.info?.server_id).toBeTypeOf('string')
    // Percent-escapes in the password are decoded; a list of servers shares the one credential.
    const escaped = await server(() => 'authorization: { users: [ { user: sbx, password: "p@ss:w/rd" } ] }')
    expect(
      await tryBus(`${escaped.url.replace('//', `//sbx:${encodeURIComponent('p@ss:w/rd')}@`)},nats://127.0.0.1:1`, {}),
    ).not.toBeInstanceOf(Error)
    const wrong = expectRefused(
      await tryBus(users.url.replace('//', '//sbx:wrong-in-url@'), {}),
      'NATS_AUTHORIZATION_VIOLATION',
      'wrong-in-url',
    )
    expect(wrong.message).toContain('user "sbx"')
    expect(wrong.message).toContain('nats://sbx:***@127.0.0.1')

    const tokens = await server(() => 'authorization: { token: "tok3n-in-url" }')
    expect(await tryBus(tokens.url.replace('//', '//tok3n-in-url@'), {})).not.toBeInstanceOf(Error)
    const badToken = expectRefused(
      await tryBus(tokens.url.replace('//', '//wrong-tok3n@'), {}),
      'NATS_AUTHORIZATION_VIOLATION',
      'wrong-tok3n',
    )
    expect(badToken.message).toContain('nats://***@127.0.0.1')
    expect(badToken.message).toContain('the token (from the URL)')
  })

  it('the URL credential wins over a user or token given separately; with creds or nkey it is a conflict', () => {
    expect(natsConnectOptions({ servers: 'nats://a:b@h:4222', user: 'other', password: 'x' }).servers).toEqual(['nats://h:4222'])
    expect(() => natsConnectOptions({ servers: 'nats://a:b@h:4222', nkey: '/x.nk' })).toThrow(NatsCredentialsError)
    expect(() => natsConnectOptions({ servers: 'nats://a:b@h:4222,nats://c:d@h2:4222' })).toThrow(/different credentials/)
    expect(() => natsConnectOptions({ servers: 'nats://:pw@h:4222' })).toThrow(/password but no user/)
  })
})

describe('token', () => {
  it('connects with the token; a wrong token is refused without being quoted', async () => {
    const s = await server(() => 'authorization: { token: "tok-abc-123" }')
    expect(await tryBus(s.url, { token: 'tok-abc-123' })).not.toBeInstanceOf(Error)
    const error = expectRefused(await tryBus(s.url, { token: 'tok-wrong-999' }), 'NATS_AUTHORIZATION_VIOLATION', 'tok-wrong-999')
    expect(error.message).toContain('the token')
  })
})

describe('nkey', () => {
  it('connects with a seed file; an unknown key is refused naming the file', async () => {
    const allowed = createUser()
    const other = createUser()
    const s = await server(() => `authorization: { users: [ { nkey: ${allowed.getPublicKey()} } ] }`)
    const good = path.join(s.dir, 'allowed.nk')
    const bad = path.join(s.dir, 'other.nk')
    writeFileSync(good, `# a user seed\n${seedText(allowed)}\n`)
    writeFileSync(bad, seedText(other))
    expect(await tryBus(s.url, { nkey: good })).not.toBeInstanceOf(Error)
    const error = expectRefused(await tryBus(s.url, { nkey: bad }), 'NATS_AUTHORIZATION_VIOLATION', seedText(other))
    expect(error.message).toContain(bad)
  })

  it('a missing or invalid seed file is a clear error before connecting', () => {
    expect(() => natsConnectOptions({ nkey: '/nonexistent/x.nk' })).toThrow(
      /cannot read the nkey seed file \/nonexistent\/x\.nk \(ENOENT\)/,
    )
  })
})

/** A JWT as nsc writes it: header and claims in base64url, signed by the issuer's nkey. */
function jwt(issuer: KeyPair, subject: string, name: string, nats: Record<string, unknown>): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const claims = {
    iat: Math.floor(Date.now() / 1000),
    iss: issuer.getPublicKey(),
    name,
    sub: subject,
    nats: { ...nats, version: 2 },
  }
  const jti = createHash('sha256').update(JSON.stringify(claims)).digest('base64url').slice(0, 52)
  const unsigned = `${encode({ typ: 'JWT', alg: 'ed25519-nkey' })}.${encode({ jti, ...claims })}`
  return `${unsigned}.${Buffer.from(issuer.sign(new TextEncoder().encode(unsigned))).toString('base64url')}`
}

describe('creds (operator mode)', () => {
  it('connects with a creds file; a user of another account is refused naming the file', async () => {
    const operator = createOperator()
    const account = createAccount()
    const user = createUser()
    const stranger = createUser()
    const unlimited = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1 }
    const accountJwt = jwt(operator, account.getPublicKey(), 'app', {
      type: 'account',
      limits: { ...unlimited, mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 },
    })
    // JetStream in operator mode needs a system account.
    const system = createAccount()
    const systemJwt = jwt(operator, system.getPublicKey(), 'SYS', { type: 'account', limits: unlimited })
    const operatorJwt = jwt(operator, operator.getPublicKey(), 'op', { type: 'operator', system_account: system.getPublicKey() })
    const s = await server(() =>
      [
        `operator: ${operatorJwt}`,
        `system_account: ${system.getPublicKey()}`,
        'resolver: MEMORY',
        `resolver_preload: { ${account.getPublicKey()}: ${accountJwt}, ${system.getPublicKey()}: ${systemJwt} }`,
      ].join('\n'),
    )
    const creds = (pair: KeyPair, issuer: KeyPair, file: string) => {
      const userJwt = jwt(issuer, pair.getPublicKey(), 'u', { type: 'user', pub: {}, sub: {}, subs: -1, data: -1, payload: -1 })
      writeFileSync(
        file,
        `-----BEGIN NATS USER JWT-----\n${userJwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seedText(pair)}\n------END USER NKEY SEED------\n`,
      )
      return file
    }
    const good = creds(user, account, path.join(s.dir, 'user.creds'))
    const bus = await tryBus(s.url, { creds: good })
    expect(bus).not.toBeInstanceOf(Error)
    // Signed by an account the operator does not know.
    const bad = creds(stranger, createAccount(), path.join(s.dir, 'stranger.creds'))
    const error = expectRefused(await tryBus(s.url, { creds: bad }), 'NATS_AUTHORIZATION_VIOLATION', seedText(stranger))
    expect(error.message).toContain(bad)
  })
})

describe('TLS', () => {
  it('without the CA the error says it is a certificate problem; with --tlsca it connects', async () => {
    const s = await server((dir) => {
      const { cert, key } = makeCertificates(dir)
      return `tls: { cert_file: ${JSON.stringify(cert)}, key_file: ${JSON.stringify(key)} }`
    })
    const error = expectRefused(await tryBus(s.url, {}), 'NATS_TLS_FAILED')
    expect(error.message).toMatch(/certificate problem/)
    expect(error.message).toContain('--tlsca')
    expect(await tryBus(s.url, { tlsCa: path.join(s.dir, 'ca.pem') })).not.toBeInstanceOf(Error)
  })

  it('a server that verifies clients: with --tlscert/--tlskey it connects, without them TLS fails', async () => {
    const s = await server((dir) => {
      const { ca, cert, key } = makeCertificates(dir)
      return `tls: { cert_file: ${JSON.stringify(cert)}, key_file: ${JSON.stringify(key)}, ca_file: ${JSON.stringify(ca)}, verify: true }`
    })
    const tlsCa = path.join(s.dir, 'ca.pem')
    const withCert = await tryBus(s.url, {
      tlsCa,
      tlsCert: path.join(s.dir, 'client.pem'),
      tlsKey: path.join(s.dir, 'client.key'),
    })
    expect(withCert).not.toBeInstanceOf(Error)
    const without = await tryBus(s.url, { tlsCa })
    expect(without).toBeInstanceOf(Error)
    expect((without as Error & { code?: string }).code).toBe('NATS_TLS_FAILED')
  })

  it('client certificates: TLS-first and cert/key pairs map to the client options; half a pair is refused', () => {
    expect(() => natsConnectOptions({ tlsCert: '/x.pem' })).toThrow(NatsCredentialsError)
    expect(natsConnectOptions({ tlsFirst: true }).tls).toEqual({ handshakeFirst: true })
  })
})

describe('servers and environment', () => {
  it('reads the nats CLI variables; options win, and an explicit identity replaces the environment one', () => {
    const env = natsCredentialsFromEnv({
      NATS_URL: 'nats://a:4222, nats://b:4222',
      NATS_USER: 'env-user',
      NATS_PASSWORD: 'p',
      NATS_CA: '/ca.pem',
    })
    expect(serverList(env.servers)).toEqual(['nats://a:4222', 'nats://b:4222'])
    expect(mergeCredentials({ token: 't' }, env)).toEqual({
      servers: 'nats://a:4222, nats://b:4222',
      token: 't',
      tlsCa: '/ca.pem',
    })
    expect(mergeCredentials({}, env).user).toBe('env-user')
    expect(() => natsConnectOptions({ user: 'u', token: 't' })).toThrow(/give one of/)
  })

  it('several servers: the first is down, the second answers', async () => {
    const s = await server(() => 'authorization: { users: [ { user: bob, password: pw } ] }')
    const dead = await freePort()
    const bus = await tryBus(s.url, { servers: `nats://127.0.0.1:${dead},${s.url}`, user: 'bob', password: 'pw' })
    expect(bus).not.toBeInstanceOf(Error)
  })

  it('nothing listening is classified as such', async () => {
    const port = await freePort()
    const error = await connect({ servers: `127.0.0.1:${port}`, reconnect: false }).catch((e: unknown) => e)
    const classified = classifyConnectError(error, { servers: [`nats://127.0.0.1:${port}`], credential: 'no credentials' })
    expect(classified?.code).toBe('NATS_UNREACHABLE')
    expect(classified?.message).toContain(`nothing listens for NATS at nats://127.0.0.1:${port}`)
  })
})
