import type { NatsBus } from '@signalbox/actors'
import type { Subjects } from '@signalbox/core'
import { CliError, type CommandContext, NO_BUS_MESSAGE } from './cli.ts'

/** How long a command waits for the NATS server before giving up (the bus itself would wait forever). */
export const CONNECT_TIMEOUT_MS = 5_000

/** Connects to the bus named by `--nats` / `SIGNALBOX_NATS_URL`; a clear error when there is none. */
export async function openBus(context: CommandContext, role: string): Promise<{ bus: NatsBus; subjects: Subjects; url: string }> {
  const url = context.global.nats
  if (!url) throw new CliError('NO_BUS', NO_BUS_MESSAGE)
  const [{ connectNatsBus }, { AbortedError, createSubjects }] = await Promise.all([import('@signalbox/actors'), import('@signalbox/core')])
  const subjects = createSubjects(context.global.prefix)
  const signal = AbortSignal.timeout(CONNECT_TIMEOUT_MS)
  try {
    const bus = await connectNatsBus({ servers: url, prefix: subjects.prefix, name: `signalbox-${role}-${process.pid}`, signal })
    return { bus, subjects, url }
  } catch (error) {
    if (error instanceof AbortedError || signal.aborted) {
      throw new CliError('BUS_CONNECT_FAILED', `could not reach NATS at ${url} within ${CONNECT_TIMEOUT_MS / 1000} s (is nats-server running, with JetStream: -js?)`, {
        cause: error,
      })
    }
    throw error
  }
}

/** Resolves on the first SIGINT or SIGTERM (and removes its listeners). */
export function untilSignal(): { promise: Promise<NodeJS.Signals>; dispose(): void } {
  let resolve!: (signal: NodeJS.Signals) => void
  const promise = new Promise<NodeJS.Signals>((r) => {
    resolve = r
  })
  const onInt = () => resolve('SIGINT')
  const onTerm = () => resolve('SIGTERM')
  process.once('SIGINT', onInt)
  process.once('SIGTERM', onTerm)
  const dispose = () => {
    process.off('SIGINT', onInt)
    process.off('SIGTERM', onTerm)
  }
  void promise.then(dispose)
  return { promise, dispose }
}
