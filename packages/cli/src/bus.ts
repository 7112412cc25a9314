import net from 'node:net'
import type { NatsBus, StreamWait } from '@signalbox/actors/nats'
import type { Subjects } from '@signalbox/core/bus'
import { CliError, type CommandContext, NO_BUS_MESSAGE } from './cli.ts'
import { credentialFlags, privilegeFlags } from './connection-flags.ts'

/**
 * The key a command signs with (decisions, answers, steering, cancels): the nkey seed of
 * `--nkey` / `NATS_NKEY`, the same key the user logs in with. Undefined without one (unsigned).
 */
export async function signerFrom(context: CommandContext): Promise<import('@signalbox/actors/trust').Signer | undefined> {
  const file = (context.values.nkey as string | undefined) ?? context.io.env.NATS_NKEY
  if (!file) return undefined
  const [{ readFile }, { createSigner }] = await Promise.all([import('node:fs/promises'), import('@signalbox/actors/trust')])
  let seed: string
  try {
    seed = await readFile(file, 'utf8')
  } catch (error) {
    throw new CliError('NKEY_UNREADABLE', `cannot read the nkey seed file ${file}`, { cause: error })
  }
  return createSigner(seed)
}

/** How long a command waits for the NATS server to answer before giving up (the bus itself would wait forever). */
export const CONNECT_TIMEOUT_MS = 5_000
/**
 * The same for a service (`waitForStream`): one started with many others on a busy machine (a whole
 * deployment coming up) may take longer to get its turn, and nothing listening still fails at once.
 */
export const SERVICE_CONNECT_TIMEOUT_MS = 30_000

/**
 * Connects to the bus named by `--nats` / `SIGNALBOX_NATS_URL`; a clear error when there is none.
 * `url` is for showing: a password or token in it is masked (`nats://user:***@host`).
 *
 * Under `--stream-access check` the durable stream is an agent host's to create. A service
 * (`waitForStream`: a host, reviewer, watcher, console...) started first waits for it, saying so
 * once, until Ctrl-C: under least privilege the people and observers often start before the
 * hosts; so does a host whose cluster is still forming. A one-shot command fails at once
 * instead, naming what is missing.
 */
export async function openBus(
  context: CommandContext,
  role: string,
  options: { replicas?: 1 | 3 | 5; waitForStream?: boolean } = {},
): Promise<{ bus: NatsBus; subjects: Subjects; url: string }> {
  const servers = context.global.nats
  if (!servers) throw new CliError('NO_BUS', NO_BUS_MESSAGE)
  const [{ connectNatsBus, mergeCredentials, natsCredentialsFromEnv, redactUrlSecrets }, { createSubjects }, { AbortedError }] =
    await Promise.all([import('@signalbox/actors/nats'), import('@signalbox/core/bus'), import('@signalbox/core')])
  const url = redactUrlSecrets(servers)
  // Nothing listening is the common mistake: say so at once (the client would retry for the whole timeout).
  const refused = await refusedAt(servers)
  if (refused)
    throw new CliError(
      'BUS_CONNECT_FAILED',
      `could not reach NATS at ${url}: nothing listens on ${refused} (is nats-server running, with JetStream: -js?)`,
    )
  const subjects = createSubjects(context.global.prefix)
  // Reaching the server has its deadline (connectTimeoutMs); waiting for the stream has none but Ctrl-C.
  const stop = new AbortController()
  const signal = context.io.signal ? AbortSignal.any([context.io.signal, stop.signal]) : stop.signal
  let waited: { streamName: string; why: StreamWait } | undefined
  const onWaitingForStream = (streamName: string, why: StreamWait) => {
    waited = { streamName, why }
    if (!options.waitForStream) stop.abort()
    else
      context.err(
        `waiting for the durable stream "${streamName}" on ${subjects.prefix}: ${why === 'missing' ? 'the first agent host creates it' : 'the cluster cannot place its replicas until its nodes have joined'}`,
      )
  }
  try {
    // Flags first, then the `nats` CLI's variables; NATS_URL is already in `url`.
    const { servers: _env, ...credentials } = mergeCredentials(
      credentialFlags(context.values),
      natsCredentialsFromEnv(context.io.env),
    )
    const privilege = privilegeFlags(context.values)
    // On a cluster the stream (raised, never lowered) and its consumers keep `replicas` copies.
    const durable = {
      ...privilege.durable,
      ...(options.replicas ? { replicas: options.replicas } : {}),
      onWaitingForStream,
    }
    const bus = await connectNatsBus({
      servers,
      credentials,
      ...privilege,
      durable,
      prefix: subjects.prefix,
      name: `signalbox-${role}-${process.pid}`,
      connectTimeoutMs: options.waitForStream ? SERVICE_CONNECT_TIMEOUT_MS : CONNECT_TIMEOUT_MS,
      signal,
    })
    return { bus, subjects, url }
  } catch (error) {
    if (waited !== undefined && AbortedError.is(error)) {
      const { streamName, why } = waited
      if (!stop.signal.aborted) throw new CliError('ABORTED', `stopped while waiting for the durable stream "${streamName}"`)
      if (why === 'missing')
        throw new CliError(
          'BUS_STREAM_NOT_FOUND',
          `no durable stream "${streamName}" for ${subjects.prefix} at ${url}: no agent host has created it yet (this user only reads it: --stream-access check)`,
        )
      throw new CliError(
        'BUS_DURABLE_SETUP_FAILED',
        `the cluster at ${url} cannot place the durable stream "${streamName}" yet: fewer of its nodes have joined than its replicas`,
      )
    }
    throw error
  }
}

/** `host:port` when every server of `url` refuses TCP connections, else undefined (reachable, or unsure). */
async function refusedAt(url: string): Promise<string | undefined> {
  const targets: { host: string; port: number }[] = []
  for (const server of url.split(',')) {
    try {
      const parsed = new URL(server.includes('://') ? server.trim() : `nats://${server.trim()}`)
      targets.push({ host: parsed.hostname.replace(/^\[|\]$/g, ''), port: Number(parsed.port) || 4222 })
    } catch {
      return undefined // let the client report the malformed URL
    }
  }
  const results = await Promise.all(
    targets.map(
      ({ host, port }) =>
        new Promise<boolean>((resolve) => {
          const socket = net.connect({ host, port })
          const done = (refused: boolean) => {
            clearTimeout(timer)
            socket.destroy()
            resolve(refused)
          }
          const timer = setTimeout(() => done(false), 1_000)
          socket.once('connect', () => done(false))
          socket.once('error', (error: NodeJS.ErrnoException) =>
            done(error.code === 'ECONNREFUSED' || error.code === 'ENOTFOUND'),
          )
        }),
    ),
  )
  return results.every(Boolean) ? targets.map(({ host, port }) => `${host}:${port}`).join(', ') : undefined
}

/**
 * Resolves on the first SIGINT or SIGTERM, or when `signal` (the command's `io.signal`, for
 * embedding and tests) aborts; removes its listeners once settled.
 */
export function untilSignal(signal?: AbortSignal): { promise: Promise<NodeJS.Signals | 'abort'>; dispose(): void } {
  let resolve!: (signal: NodeJS.Signals | 'abort') => void
  const promise = new Promise<NodeJS.Signals | 'abort'>((r) => {
    resolve = r
  })
  const onInt = () => resolve('SIGINT')
  const onTerm = () => resolve('SIGTERM')
  const onAbort = () => resolve('abort')
  process.once('SIGINT', onInt)
  process.once('SIGTERM', onTerm)
  if (signal?.aborted) onAbort()
  else signal?.addEventListener('abort', onAbort, { once: true })
  const dispose = () => {
    process.off('SIGINT', onInt)
    process.off('SIGTERM', onTerm)
    signal?.removeEventListener('abort', onAbort)
  }
  void promise.then(dispose)
  return { promise, dispose }
}
