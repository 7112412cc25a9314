/**
 * The connection flags every command that connects shares, named as the `nats` CLI names them.
 * Runtime-free (help and usage errors answer without loading NATS); `bus.ts` turns them into
 * credentials, with the `nats` CLI's environment variables for what the flags leave out.
 */
import type { NatsCredentialOptions } from '@signalbox/actors/nats'
import type { OptionSpec } from './cli.ts'

export const CONNECTION_OPTIONS: Record<string, OptionSpec> = {
  server: {
    type: 'string',
    short: 's',
    valueName: '<url[,url]>',
    description: 'same as --nats (servers of a cluster, comma-separated)',
  },
  creds: { type: 'string', valueName: '<file>', description: 'user credentials file (JWT and seed)', default: '$NATS_CREDS' },
  nkey: { type: 'string', valueName: '<file>', description: 'file holding a user nkey seed', default: '$NATS_NKEY' },
  user: { type: 'string', valueName: '<name>', description: 'user name', default: '$NATS_USER' },
  password: { type: 'string', valueName: '<password>', description: 'password of --user', default: '$NATS_PASSWORD' },
  token: { type: 'string', valueName: '<token>', description: 'authentication token', default: '$NATS_TOKEN' },
  tlscert: { type: 'string', valueName: '<file>', description: 'TLS client certificate (PEM)', default: '$NATS_CERT' },
  tlskey: { type: 'string', valueName: '<file>', description: 'TLS client key (PEM)', default: '$NATS_KEY' },
  tlsca: {
    type: 'string',
    valueName: '<file>',
    description: "CA that signed the server's certificate (PEM)",
    default: '$NATS_CA',
  },
  tlsfirst: { type: 'boolean', description: 'start with the TLS handshake (servers with handshake_first)' },
  // Least privilege (docs/security.md): the names `signalbox permissions` pins for this user.
  'inbox-prefix': {
    type: 'string',
    valueName: '<prefix>',
    description: "inbox for this client's replies, e.g. _INBOX.tina (least privilege)",
    default: '_INBOX',
  },
  'consumer-prefix': {
    type: 'string',
    valueName: '<name>',
    description: 'name private consumers <name>_<purpose> (least privilege: the user name)',
  },
  'stream-access': {
    type: 'string',
    valueName: '<manage|check>',
    description: 'check: only read the stream, waiting for it (every role but the agent, under least privilege)',
    default: 'manage',
    choices: ['manage', 'check'],
  },
}

/** How the bus is opened under least privilege (undefined where a flag was not given). */
export function privilegeFlags(values: Record<string, string | boolean | undefined>): {
  inboxPrefix?: string
  consumerPrefix?: string
  durable?: { access: 'manage' | 'check' }
} {
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined)
  const access = text('stream-access')
  const found = {
    inboxPrefix: text('inbox-prefix'),
    consumerPrefix: text('consumer-prefix'),
    durable: access === 'check' || access === 'manage' ? { access } : undefined,
  }
  return Object.fromEntries(Object.entries(found).filter(([, value]) => value !== undefined))
}

/** The credentials the flags can name: the library's, less the servers (`--nats` / `--server` name those). */
export type CredentialFlags = Omit<NatsCredentialOptions, 'servers'>

/** Credentials named by the flags (undefined where a flag was not given). */
export function credentialFlags(values: Record<string, string | boolean | undefined>): CredentialFlags {
  const text = (name: string) => (typeof values[name] === 'string' ? (values[name] as string) : undefined)
  const found = {
    creds: text('creds'),
    nkey: text('nkey'),
    user: text('user'),
    password: text('password'),
    token: text('token'),
    tlsCert: text('tlscert'),
    tlsKey: text('tlskey'),
    tlsCa: text('tlsca'),
    tlsFirst: values.tlsfirst === true ? true : undefined,
  } satisfies Record<keyof CredentialFlags, unknown>
  return Object.fromEntries(Object.entries(found).filter(([, value]) => value !== undefined))
}
