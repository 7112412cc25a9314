/**
 * Why a connection to NATS failed, in words a person can act on: the server refused the
 * credential (authorization violation), TLS failed (which certificate, and what to pass), or
 * nothing listens. Messages name the credential, never its secret, and strip passwords from URLs.
 */
import { type ConnectionOptions, connect, type NatsConnection, errors as natsErrors } from '@nats-io/transport-node'
import { BusError } from '@signalbox/core/bus'
import { redactUrlSecrets } from './credentials.ts'

export type NatsConnectErrorCode =
  | 'NATS_AUTHORIZATION_VIOLATION'
  | 'NATS_AUTHENTICATION_EXPIRED'
  | 'NATS_TLS_FAILED'
  | 'NATS_UNREACHABLE'

export class NatsConnectError extends BusError {
  declare readonly code: NatsConnectErrorCode
  constructor(code: NatsConnectErrorCode, message: string, details: Record<string, unknown>) {
    super(code, message, { fault: 'user', details })
  }
}

/** Every URL in `text` with its password or token masked (`nats://user:***@host`, `nats://***@host`). */
export const redactUrls = redactUrlSecrets

const CERTIFICATE_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
])

/** The codes of an error and its causes (nats.js wraps socket errors). */
function chain(error: unknown): { codes: string[]; messages: string[] } {
  const codes: string[] = []
  const messages: string[] = []
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code
    if (typeof code === 'string') codes.push(code)
    messages.push(e.message)
  }
  return { codes, messages }
}

/**
 * A `NatsConnectError` when `error` is an authorization, TLS or nothing-listening failure;
 * undefined for anything else. `credential` comes from `describeCredential`.
 */
export function classifyConnectError(
  error: unknown,
  where: { servers: string[]; credential: string },
): NatsConnectError | undefined {
  const at = redactUrls(where.servers.join(', ') || 'the default server')
  const { codes, messages } = chain(error)
  const text = messages.join(' | ').toLowerCase()
  if (error instanceof natsErrors.UserAuthenticationExpiredError || text.includes('authentication expired')) {
    return new NatsConnectError(
      'NATS_AUTHENTICATION_EXPIRED',
      `NATS at ${at} refused ${where.credential}: the user's authentication has expired (renew the creds)`,
      { credential: where.credential },
    )
  }
  if (error instanceof natsErrors.AuthorizationError || text.includes('authorization violation')) {
    return new NatsConnectError(
      'NATS_AUTHORIZATION_VIOLATION',
      `NATS at ${at} refused ${where.credential}: authorization violation (unknown user, wrong password, token, key or creds)`,
      { credential: where.credential },
    )
  }
  const certificate = codes.find((code) => CERTIFICATE_CODES.has(code))
  if (certificate) {
    return new NatsConnectError(
      'NATS_TLS_FAILED',
      `TLS to NATS at ${at} failed: certificate problem (${certificate}): the server's certificate could not be verified; pass the CA that signed it (--tlsca / NATS_CA)`,
      { reason: certificate },
    )
  }
  const clientRefused = codes.find((code) =>
    /ALERT_(BAD_CERTIFICATE|CERTIFICATE_REQUIRED|UNKNOWN_CA|HANDSHAKE_FAILURE)$/.test(code),
  )
  if (clientRefused) {
    return new NatsConnectError(
      'NATS_TLS_FAILED',
      `TLS to NATS at ${at} failed: the server refused the client certificate, or wanted one (pass --tlscert and --tlskey with a certificate its CA signed)`,
      { reason: clientRefused },
    )
  }
  if (
    text.includes('tls') ||
    text.includes('ssl') ||
    codes.some((code) => code.startsWith('ERR_SSL') || code.startsWith('ERR_TLS'))
  ) {
    // OpenSSL messages start with an internal error id: keep the readable part.
    const detail = redactUrls((messages[0] ?? 'handshake failed').split('\n')[0] as string).replace(
      /^[0-9A-F]+:error:[0-9A-F]+:/,
      '',
    )
    return new NatsConnectError('NATS_TLS_FAILED', `TLS to NATS at ${at} failed: ${detail}`, { reason: codes[0] ?? 'tls' })
  }
  if (codes.includes('ECONNREFUSED') || codes.includes('ENOTFOUND') || text.includes('connection refused')) {
    return new NatsConnectError('NATS_UNREACHABLE', `nothing listens for NATS at ${at} (is nats-server running?)`, {
      reason: codes.find((code) => code === 'ECONNREFUSED' || code === 'ENOTFOUND') ?? 'refused',
    })
  }
  return undefined
}

/** Failures that waiting will not cure: report them at once instead of retrying until a deadline. */
function isFatal(error: unknown): boolean {
  const classified = classifyConnectError(error, { servers: [], credential: '' })
  return classified !== undefined && classified.code !== 'NATS_UNREACHABLE'
}

/** How long the connection may take before a one-shot attempt asks the server why it does not come. */
const DIAGNOSE_AFTER_MS = 1_000

/**
 * `connect`, but a refused credential or a failed TLS handshake is reported at once: with
 * `waitOnFirstConnect` nats.js would retry those forever. One plain attempt first; if the servers
 * only are not up yet, the waiting connect takes over. Some refusals come after the handshake (a
 * server that rejects the client certificate) and make even the plain attempt retry silently, so
 * a connection still missing after a second is diagnosed by attempts without retries, one a second.
 */
export async function dialNats(options: ConnectionOptions): Promise<NatsConnection> {
  if (!options.waitOnFirstConnect) return connect(options)
  const main = (async () => {
    try {
      return await connect({ ...options, waitOnFirstConnect: false })
    } catch (error) {
      if (isFatal(error)) throw error
    }
    return connect(options)
  })()
  let timer: ReturnType<typeof setTimeout> | undefined
  let settled = false
  const diagnosis = new Promise<never>((_, reject) => {
    // Probes again after an inconclusive one (a slow or busy machine can time a probe out), so a
    // refusal is still reported rather than left to the caller's deadline.
    const probe = () => {
      timer = setTimeout(() => {
        connect({ ...options, waitOnFirstConnect: false, reconnect: false, timeout: 2_000 }).then(
          (connection) => void connection.close(),
          (error: unknown) => {
            if (isFatal(error)) reject(error)
            else if (!settled) probe()
          },
        )
      }, DIAGNOSE_AFTER_MS)
      timer.unref?.()
    }
    probe()
  })
  try {
    return await Promise.race([main, diagnosis])
  } catch (error) {
    // The waiting connect goes on in the background: close it if it ever lands.
    main.then((late) => late.close()).catch(() => {})
    throw error
  } finally {
    settled = true
    clearTimeout(timer)
  }
}
