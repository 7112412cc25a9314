/**
 * Credentials the way the `nats` CLI takes them: several server URLs, a creds file, an nkey seed
 * file, user and password, a token, TLS client certificate, CA and TLS-first, from options or the
 * same environment variables. Turned into nats.js connection options; secrets stay inside the
 * authenticator and never reach a message (`describeCredential` says which one without its value).
 */
import { readFileSync } from 'node:fs'
import { fromSeed } from '@nats-io/nkeys'
import {
  type Authenticator,
  type ConnectionOptions,
  credsAuthenticator,
  nkeyAuthenticator,
  type TlsOptions,
  tokenAuthenticator,
  usernamePasswordAuthenticator,
} from '@nats-io/transport-node'
import { BusError } from '@signalbox/core/bus'

export interface NatsCredentialOptions {
  /** Server URLs; a string may list several, comma-separated (`NATS_URL`). */
  servers?: string | string[]
  /** A `.creds` file (user JWT and seed), as `nsc` writes it (`NATS_CREDS`). */
  creds?: string
  /** A file holding an nkey seed (`SU...`) (`NATS_NKEY`). */
  nkey?: string
  user?: string
  password?: string
  token?: string
  /** Client certificate and key (PEM files) for servers that verify clients (`NATS_CERT`, `NATS_KEY`). */
  tlsCert?: string
  tlsKey?: string
  /** CA (PEM file) that signed the server's certificate (`NATS_CA`). */
  tlsCa?: string
  /** Start with the TLS handshake (servers with `handshake_first`). */
  tlsFirst?: boolean
}

export class NatsCredentialsError extends BusError {
  constructor(code: string, message: string) {
    super(code, message, { fault: 'user' })
  }
}

/** What the environment says, with the `nats` CLI's variable names. */
export function natsCredentialsFromEnv(env: NodeJS.ProcessEnv = process.env): NatsCredentialOptions {
  const pick = (name: string) => (env[name] ? env[name] : undefined)
  const found: NatsCredentialOptions = {}
  const entries: [keyof NatsCredentialOptions, string | undefined][] = [
    ['servers', pick('NATS_URL')],
    ['creds', pick('NATS_CREDS')],
    ['nkey', pick('NATS_NKEY')],
    ['user', pick('NATS_USER')],
    ['password', pick('NATS_PASSWORD')],
    ['token', pick('NATS_TOKEN')],
    ['tlsCert', pick('NATS_CERT')],
    ['tlsKey', pick('NATS_KEY')],
    ['tlsCa', pick('NATS_CA')],
  ]
  for (const [key, value] of entries) if (value !== undefined) (found as Record<string, unknown>)[key] = value
  return found
}

/** Options first, the environment for what they leave out. */
export function mergeCredentials(options: NatsCredentialOptions, fallback: NatsCredentialOptions): NatsCredentialOptions {
  const merged: NatsCredentialOptions = { ...fallback }
  for (const [key, value] of Object.entries(options)) if (value !== undefined) (merged as Record<string, unknown>)[key] = value
  // An explicit identity replaces the environment's, never mixes with it.
  const identity = ['creds', 'nkey', 'user', 'token'] as const
  if (identity.some((key) => options[key] !== undefined)) {
    for (const key of identity) if (options[key] === undefined) delete merged[key]
    if (options.user === undefined) delete merged.password
  }
  return merged
}

/** The server list: several URLs, comma-separated or as an array. */
export function serverList(servers: string | string[] | undefined): string[] {
  const list = (Array.isArray(servers) ? servers : [servers ?? '']).flatMap((s) => s.split(','))
  return list.map((s) => s.trim()).filter(Boolean)
}

/** `[scheme://]userinfo@rest`: the user info of a server URL, as the `nats` CLI reads it. */
const USER_INFO = /^([a-z][a-z0-9+.-]*:\/\/)?([^@/?#]*)@(.*)$/i

/** What a URL's user info holds: `user:password` or a token. */
type UrlCredential = { user: string; password: string } | { token: string }

function decodePart(text: string): string {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/**
 * Credentials written in the server URLs, the way the `nats` CLI (and every NATS client written
 * in Go) takes them: `nats://user:password@host:4222` logs in with that user and password,
 * `nats://token@host:4222` with that token (percent-escapes decoded). Returns the URLs without
 * them: the client library is never given a secret in a URL, so none can reach its logs or errors.
 * Several URLs must carry the same credential (or none).
 */
export function credentialsFromUrls(servers: readonly string[]): { servers: string[]; credential?: UrlCredential } {
  let found: UrlCredential | undefined
  let key: string | undefined
  const stripped = servers.map((server) => {
    const match = USER_INFO.exec(server)
    if (match === null) return server
    const [, scheme = '', info = '', rest = ''] = match
    const colon = info.indexOf(':')
    const credential: UrlCredential =
      colon < 0
        ? { token: decodePart(info) }
        : { user: decodePart(info.slice(0, colon)), password: decodePart(info.slice(colon + 1)) }
    if ('user' in credential && credential.user === '') {
      throw new NatsCredentialsError('NATS_CREDENTIALS_CONFLICT', `${redactUrlSecrets(server)} has a password but no user`)
    }
    if ('token' in credential && credential.token === '') {
      throw new NatsCredentialsError('NATS_CREDENTIALS_CONFLICT', `${redactUrlSecrets(server)} has an empty user info before "@"`)
    }
    const id = JSON.stringify(credential)
    if (key !== undefined && key !== id) {
      throw new NatsCredentialsError(
        'NATS_CREDENTIALS_CONFLICT',
        'the server URLs carry different credentials: give one credential for all servers',
      )
    }
    key = id
    found = credential
    return `${scheme}${rest}`
  })
  return found === undefined ? { servers: stripped } : { servers: stripped, credential: found }
}

/**
 * `nats://user:secret@host` → `nats://user:***@host`, `nats://secret@host` → `nats://***@host`:
 * every URL in `text` with its password or token masked (a user name is not a secret).
 */
export function redactUrlSecrets(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)([^/@\s,]*)@/gi, (_match, scheme: string, info: string) => {
    const colon = info.indexOf(':')
    return colon < 0 ? `${scheme}***@` : `${scheme}${info.slice(0, colon)}:***@`
  })
}

/** Which credential a connection uses, without its secret: for error messages and logs. */
export function describeCredential(credentials: NatsCredentialOptions): string {
  const inUrl = credentialsFromUrls(serverList(credentials.servers)).credential
  if (inUrl !== undefined) {
    return 'user' in inUrl ? `user ${JSON.stringify(inUrl.user)} with a password (from the URL)` : 'the token (from the URL)'
  }
  if (credentials.creds) return `the creds file ${credentials.creds}`
  if (credentials.nkey) return `the nkey in ${credentials.nkey}`
  if (credentials.user !== undefined)
    return `user ${JSON.stringify(credentials.user)} with ${credentials.password ? 'a' : 'no'} password`
  if (credentials.token !== undefined) return 'the token'
  return 'no credentials'
}

function readSecretFile(path: string, what: string, code: string): Uint8Array {
  try {
    return readFileSync(path)
  } catch (error) {
    const reason = (error as NodeJS.ErrnoException).code ?? 'unreadable'
    throw new NatsCredentialsError(code, `cannot read the ${what} ${path} (${reason})`)
  }
}

/** The seed in an nkey file: the first line that is a seed (files may carry comments, like `nk` output). */
function seedFrom(path: string): Uint8Array {
  const text = new TextDecoder().decode(readSecretFile(path, 'nkey seed file', 'NATS_NKEY_UNREADABLE'))
  const seed = text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .find((line) => /^S[A-Z0-9]{40,}$/.test(line))
  if (seed) {
    try {
      fromSeed(new TextEncoder().encode(seed))
      return new TextEncoder().encode(seed)
    } catch {
      // falls through to the error below
    }
  }
  throw new NatsCredentialsError(
    'NATS_NKEY_INVALID',
    `${path} holds no valid nkey seed (expected a line such as \`nk -gen user\` prints)`,
  )
}

/**
 * nats.js connection options for these credentials: `authenticator`, `tls`, and the servers when
 * given (without the credentials their URLs carry: those are used as the `nats` CLI uses them,
 * instead of a user, password or token given separately).
 */
export function natsConnectOptions(given: NatsCredentialOptions = {}): Partial<ConnectionOptions> {
  const inUrls = credentialsFromUrls(serverList(given.servers))
  let credentials = given
  if (inUrls.credential !== undefined) {
    if (given.creds !== undefined || given.nkey !== undefined) {
      throw new NatsCredentialsError(
        'NATS_CREDENTIALS_CONFLICT',
        `give one of creds, nkey or the credentials in the server URL (got ${given.creds !== undefined ? 'creds' : 'nkey'} and a URL with credentials)`,
      )
    }
    const { user: _u, password: _p, token: _t, ...rest } = given
    credentials = { ...rest, ...inUrls.credential }
  }
  const chosen = (['creds', 'nkey', 'user', 'token'] as const).filter((key) => credentials[key] !== undefined)
  if (chosen.length > 1) {
    throw new NatsCredentialsError(
      'NATS_CREDENTIALS_CONFLICT',
      `give one of creds, nkey, user/password or token (got ${chosen.join(', ')})`,
    )
  }
  if (credentials.password !== undefined && credentials.user === undefined) {
    throw new NatsCredentialsError('NATS_CREDENTIALS_CONFLICT', 'a password needs a user')
  }
  const options: Partial<ConnectionOptions> = {}
  if (inUrls.servers.length > 0) options.servers = inUrls.servers
  let authenticator: Authenticator | undefined
  if (credentials.creds) {
    const bytes = readSecretFile(credentials.creds, 'creds file', 'NATS_CREDS_UNREADABLE')
    if (!new TextDecoder().decode(bytes).includes('NATS USER JWT')) {
      throw new NatsCredentialsError('NATS_CREDS_INVALID', `${credentials.creds} is not a creds file (no NATS USER JWT section)`)
    }
    authenticator = credsAuthenticator(bytes)
  } else if (credentials.nkey) {
    authenticator = nkeyAuthenticator(seedFrom(credentials.nkey))
  } else if (credentials.user !== undefined) {
    authenticator = usernamePasswordAuthenticator(credentials.user, credentials.password)
  } else if (credentials.token !== undefined) {
    authenticator = tokenAuthenticator(credentials.token)
  }
  if (authenticator) options.authenticator = authenticator
  const tls = tlsOptions(credentials)
  if (tls) options.tls = tls
  return options
}

function tlsOptions(credentials: NatsCredentialOptions): TlsOptions | undefined {
  const { tlsCert, tlsKey, tlsCa, tlsFirst } = credentials
  if (!tlsCert && !tlsKey && !tlsCa && !tlsFirst) return undefined
  if (Boolean(tlsCert) !== Boolean(tlsKey)) {
    throw new NatsCredentialsError(
      'NATS_TLS_CONFIG',
      'a TLS client certificate needs its key, and a key its certificate (--tlscert with --tlskey)',
    )
  }
  const tls: TlsOptions = {}
  // Read now, so a missing file is a clear error here rather than a failed handshake later.
  if (tlsCert && tlsKey) {
    tls.cert = new TextDecoder().decode(readSecretFile(tlsCert, 'TLS certificate', 'NATS_TLS_CONFIG'))
    tls.key = new TextDecoder().decode(readSecretFile(tlsKey, 'TLS key', 'NATS_TLS_CONFIG'))
  }
  if (tlsCa) tls.ca = new TextDecoder().decode(readSecretFile(tlsCa, 'TLS CA', 'NATS_TLS_CONFIG'))
  if (tlsFirst) tls.handshakeFirst = true
  return tls
}

/** The bus options' credentials as one set: `credentials` first, then the plain user, password or token, and the servers. */
export function busCredentials(options: {
  servers?: string | string[]
  user?: string
  pass?: string
  token?: string
  credentials?: NatsCredentialOptions
}): NatsCredentialOptions {
  const plain: NatsCredentialOptions = {}
  if (options.servers !== undefined) plain.servers = options.servers
  if (options.user !== undefined) plain.user = options.user
  if (options.pass !== undefined) plain.password = options.pass
  if (options.token !== undefined) plain.token = options.token
  return mergeCredentials(options.credentials ?? {}, plain)
}

/** `describeCredential` for the bus options, which also take a plain user, password or token. */
export function credentialOf(options: Parameters<typeof busCredentials>[0]): string {
  return describeCredential(busCredentials(options))
}
