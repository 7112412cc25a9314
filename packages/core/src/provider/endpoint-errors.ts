/**
 * What a failed model call means, for every provider: which HTTP answers are worth a retry and
 * under which code, a connection that dropped, and a 200 that is not what was asked for. One home,
 * so `OpenAIProvider` and the AI SDK adapter classify the same failure the same way.
 */
import { ProviderError } from '../errors.ts'

/** What to tell the user to check, per provider, when the endpoint refuses the credential or the model. */
export interface RefusalHints {
  /** After 401 / 403. */
  auth: string
  /** After 404. */
  notFound: string
}

/** An endpoint's HTTP error answer: 429, 408, 409 and 5xx are retried; the rest are not. */
export function httpStatusError(
  where: string,
  status: number | undefined,
  detail: string,
  options: { cause: unknown; headers?: Headers | Record<string, string> | undefined; hints: RefusalHints },
): ProviderError {
  const { cause, hints } = options
  if (status === 429 || status === 408 || status === 409 || (status !== undefined && status >= 500)) {
    const error = new ProviderError(`The model endpoint ${where} answered ${status}: ${detail}`, {
      status,
      retryable: true,
      cause,
      code: status === 429 ? 'PROVIDER_RATE_LIMITED' : 'PROVIDER_UNAVAILABLE',
    })
    const retryAfterMs = parseRetryAfter(options.headers)
    if (retryAfterMs !== undefined) (error.details as Record<string, unknown>).retryAfterMs = retryAfterMs
    return error
  }
  const hint =
    status === 401 || status === 403
      ? hints.auth
      : status === 404
        ? hints.notFound
        : status === 400 || status === 422
          ? 'The endpoint rejected the request; check the model supports tool calls and the tool schemas.'
          : 'See the endpoint message.'
  return new ProviderError(`The model endpoint ${where} refused the request (${status}): ${detail}. ${hint}`, {
    ...(status === undefined ? {} : { status }),
    retryable: false,
    cause,
    code: status === 401 || status === 403 ? 'PROVIDER_AUTH' : status === 404 ? 'PROVIDER_NOT_FOUND' : 'PROVIDER_REJECTED',
  })
}

/**
 * No connection to the endpoint at all (refused, DNS, TLS, timeout): transient, worth a retry. The
 * SDK says only "Connection error."; the socket's own reason, at the end of the cause chain, is
 * what tells a refused port from a certificate the process does not trust.
 */
export function unreachableError(where: string, detail: string, cause: unknown): ProviderError {
  const reason = rootCause(cause)
  const said = detail.replace(/\.+$/, '')
  const why = reason !== undefined && reason !== said && !said.includes(reason) ? ` (${reason})` : ''
  return new ProviderError(`Could not reach the model endpoint ${where}: ${said}${why}. Is the server running?`, {
    retryable: true,
    cause,
    code: 'PROVIDER_UNREACHABLE',
  })
}

/** A 200 whose body is not a chat completion: the endpoint (or a proxy before it) is not what it seems. */
export function notACompletion(where: string, what: string, body: unknown): ProviderError {
  const shown = body === undefined ? '' : `: ${preview(body)}`
  return new ProviderError(
    `The model endpoint ${where} ${what}${shown}. Check that baseURL points at an OpenAI-compatible API (ending with its root, e.g. /v1).`,
    { retryable: false },
  )
}

/**
 * Any other failure: a connection that dropped mid-response (a reset while streaming) is
 * transient and retried; anything else is not.
 */
export function otherCallError(where: string, error: unknown): ProviderError {
  if (isConnectionDrop(error)) {
    return new ProviderError(`The connection to the model endpoint ${where} was lost: ${describeChain(error)}.`, {
      retryable: true,
      cause: error,
      code: 'PROVIDER_UNREACHABLE',
    })
  }
  return new ProviderError(`The model call to ${where} failed: ${String((error as Error)?.message ?? error)}`, {
    retryable: false,
    cause: error,
  })
}

/** What came back, short enough for an error message. */
export function preview(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))
  return text.length > 300 ? `${text.slice(0, 300)}…` : text
}

const CONNECTION_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
])

/** An error and its causes, the error first (five at most: a chain may loop). */
function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = []
  for (let e = error; e && chain.length < 5; e = (e as { cause?: unknown }).cause) chain.push(e)
  return chain
}

/** A network failure anywhere in the cause chain (undici reports a reset as `TypeError: terminated`). */
export function isConnectionDrop(error: unknown): boolean {
  return causeChain(error).some((e) => {
    const code = (e as { code?: unknown }).code
    return (typeof code === 'string' && CONNECTION_CODES.has(code)) || (e instanceof TypeError && e.message === 'terminated')
  })
}

/** The message of the last error in a cause chain, when the chain has more than one. */
function rootCause(error: unknown): string | undefined {
  const chain = causeChain(error)
  const last = chain.at(-1)
  return chain.length > 1 && last instanceof Error && last.message !== '' ? last.message : undefined
}

/** The messages of an error and its causes, joined. */
export function describeChain(error: unknown): string {
  return causeChain(error)
    .map((e) => (e instanceof Error ? e.message : String(e)))
    .join(': ')
}

function parseRetryAfter(headers: Headers | Record<string, string> | undefined): number | undefined {
  const get = (name: string): string | null | undefined =>
    headers === undefined
      ? undefined
      : typeof headers.get === 'function'
        ? (headers as Headers).get(name)
        : (headers as Record<string, string>)[name]
  const ms = get('retry-after-ms')
  if (ms && Number.isFinite(Number(ms))) return Number(ms)
  const seconds = get('retry-after')
  if (seconds && Number.isFinite(Number(seconds))) return Number(seconds) * 1000
  return undefined
}
