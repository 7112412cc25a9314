/**
 * Why a connection to NATS failed, in words a person can act on: the server refused the
 * credential (authorization violation), TLS failed (which certificate, and what to pass), nothing
 * listens, the host name does not resolve, or nothing answered in time. Messages name the
 * credential, never its secret, and strip passwords from URLs.
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

/** getaddrinfo's answers for a name that does not resolve (now, or at all). */
const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EAI_NODATA'])

/** The codes of an error and its causes (nats.js wraps socket errors), and the host a DNS error names. */
function chain(error: unknown): { codes: string[]; messages: string[]; hostname: string | undefined } {
  const codes: string[] = []
  const messages: string[] = []
  let hostname: string | undefined
  for (let e: unknown = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as NodeJS.ErrnoException).code
    if (typeof code === 'string') codes.push(code)
    const host = (e as { hostname?: unknown }).hostname
    if (typeof host === 'string') hostname ??= host
    messages.push(e.message)
  }
  return { codes, messages, hostname }
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
  const { codes, messages, hostname } = chain(error)
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
  const dns = codes.find((code) => DNS_CODES.has(code))
  if (dns) {
    const what = dns === 'EAI_AGAIN' ? 'could not be looked up now (temporary DNS failure)' : 'does not resolve'
    return new NatsConnectError(
      'NATS_UNREACHABLE',
      `cannot reach NATS at ${at}: the host name ${hostname ? `"${hostname}" ` : ''}${what} (DNS: ${dns}); check the server address`,
      { reason: dns, ...(hostname ? { hostname } : {}) },
    )
  }
  if (codes.includes('ECONNREFUSED') || text.includes('connection refused')) {
    return new NatsConnectError('NATS_UNREACHABLE', `nothing listens for NATS at ${at} (is nats-server running?)`, {
      reason: 'ECONNREFUSED',
    })
  }
  if (codes.includes('ETIMEDOUT') || codes.includes('EHOSTUNREACH') || codes.includes('ENETUNREACH')) {
    const reason = codes.find((code) => code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') as string
    return new NatsConnectError('NATS_UNREACHABLE', `cannot reach NATS at ${at}: no route to the server (${reason})`, { reason })
  }
  return undefined
}

/**
 * The error of a first connection that did not come within `timeoutMs`: why the last attempt
 * failed when that is known (nothing listens, the name does not resolve), else that nothing answered.
 */
export function connectTimedOut(
  timeoutMs: number,
  lastFailure: unknown,
  where: { servers: string[]; credential: string },
): NatsConnectError {
  const seconds = `${Math.round(timeoutMs / 100) / 10} s`
  const classified = lastFailure === undefined ? undefined : classifyConnectError(lastFailure, where)
  if (classified) {
    return new NatsConnectError(classified.code, `${classified.message}; still so after ${seconds} (connectTimeoutMs)`, {
      ...classified.details,
      timeoutMs,
    })
  }
  const at = redactUrls(where.servers.join(', ') || 'the default server')
  return new NatsConnectError(
    'NATS_UNREACHABLE',
    `NATS at ${at} did not answer within ${seconds} (is it a NATS server, reachable from here? connectTimeoutMs waits longer)`,
    { reason: 'timeout', timeoutMs },
  )
}

/** Failures that waiting will not cure: report them at once instead of retrying until a deadline. */
function isFatal(error: unknown): boolean {
  const classified = classifyConnectError(error, { servers: [], credential: '' })
  return classified !== undefined && classified.code !== 'NATS_UNREACHABLE'
}

/** How long the connection may take before a one-shot attempt asks the server why it does not come. */
const DIAGNOSE_AFTER_MS = 1_000

export interface DialControl {
  /**
   * Keep trying while nothing listens or the name does not resolve (a process started before its
   * server); otherwise the first attempt's failure is final, as in the `nats` CLI.
   */
  waitForServer: boolean
  /** Pause between attempts while waiting for a server. */
  retryWaitMs: number
  /** Told every failed attempt, so a caller that gives up can say why. */
  onFailure?(error: unknown): void
  /**
   * Aborted when the caller stops waiting (deadline or its own signal): no new attempt starts,
   * and a connection that lands afterwards is closed.
   */
  stop: AbortSignal
}

/**
 * `connect`, attempt by attempt (nats.js tries each server once per attempt), so that giving up
 * leaves nothing dialling in the background: nats.js's own `waitOnFirstConnect` cannot be stopped.
 * A refused credential or a failed TLS handshake is reported at once. Some refusals come after
 * the handshake (a server that rejects the client certificate) and make even one attempt retry
 * silently, so a connection still missing after a second is diagnosed by attempts without
 * retries, one a second.
 */
export async function dialNats(options: ConnectionOptions, control: DialControl): Promise<NatsConnection> {
  const { stop } = control
  const main = (async () => {
    for (;;) {
      try {
        return await connect({ ...options, waitOnFirstConnect: false })
      } catch (error) {
        control.onFailure?.(error)
        if (isFatal(error) || !control.waitForServer || stop.aborted) throw error
      }
      await pause(control.retryWaitMs, stop)
    }
  })()
  // Whatever lands after the caller left is closed.
  main.then((late) => (stop.aborted ? late.close() : undefined)).catch(() => {})
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
            if (settled || stop.aborted) return
            control.onFailure?.(error)
            if (isFatal(error)) reject(error)
            else probe()
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
    // An attempt may still be under way: close it if it ever lands.
    main.then((late) => late.close()).catch(() => {})
    throw error
  } finally {
    settled = true
    clearTimeout(timer)
  }
}

/** Waits `ms`, or less if `stop` aborts. */
function pause(ms: number, stop: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      stop.removeEventListener('abort', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    stop.addEventListener('abort', done, { once: true })
  })
}
