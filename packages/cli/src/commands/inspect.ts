import { resolve } from 'node:path'
import type { Inspector, InspectorWireEvent, startInspectionRelay } from '@signalbox/actors/inspect'
import { ErrorCode, SignalboxError } from '@signalbox/core'
import type { Bus, Subjects } from '@signalbox/core/bus'
import { openBus, untilSignal } from '../bus.ts'
import { CliError, type Command, type CommandContext, EXIT, type OptionSpec, UsageError } from '../cli.ts'

// `@signalbox/actors` is imported when the command runs (types only here): `signalbox --help` stays fast.

/** The hosted Stately inspector (as `STATELY_INSPECTOR_URL` in @signalbox/actors). */
export const STATELY_INSPECTOR_URL = 'https://stately.ai/inspect'
export const DEFAULT_INSPECT_PORT = 8080

export const OFFLINE_NOTE =
  'The hosted Stately inspector UI needs internet: offline, the page stays blank. The bridge (this page and its WebSocket) and the event stream work offline; --record keeps every event as JSONL.'

export const inspect: Command = {
  name: 'inspect',
  summary: 'watch every agent on the bus live in the Stately inspector, and record the stream',
  usage: 'inspect [--port 8080] [--record <file.jsonl>] [--url <inspector-ui-url>] [flags]',
  description: [
    "Subscribes to every runtime's inspection events (<prefix>.inspect.*: agents created with",
    'createBusInspector, reviewers and tool hosts wrapped with inspectReviewer / inspectToolHost) and',
    "serves them all in one view through @statelyai/inspect's inspector server: open the printed page.",
    'Session ids are unique per runtime, so agents from several processes never collide.',
    'Contents (messages, tool arguments and results) are only there if the publisher opted in.',
    '--record appends every event as one JSON line (works offline). The page embeds the hosted',
    'Stately inspector, which needs internet; a late page sees the last 200 events only.',
    'With --json, every event is also printed to stdout, one JSON object per line. Runs until Ctrl-C.',
  ].join('\n'),
  options: {
    port: {
      type: 'string',
      valueName: '<port>',
      description: 'port of the bridge page and its WebSocket',
      default: String(DEFAULT_INSPECT_PORT),
    },
    record: { type: 'string', valueName: '<file>', description: 'append every event to this JSONL file' },
    url: { type: 'string', valueName: '<url>', description: 'the inspector UI the page embeds', default: STATELY_INSPECTOR_URL },
  },
  bus: 'required',
  maxArgs: 0,
  examples: [
    ['signalbox inspect', 'open http://localhost:8080 and watch every agent on the bus'],
    ['signalbox inspect --record inspect.jsonl', 'also keep the stream (offline, for later)'],
    [
      'signalbox inspect --json | jq -c "select(.type == \\"@xstate.snapshot\\") | .snapshot.value"',
      'the states, as they change',
    ],
  ],
  async run(context) {
    const port = parsePort(context.values.port, DEFAULT_INSPECT_PORT, context)
    const record = typeof context.values.record === 'string' ? resolve(context.io.cwd, context.values.record) : undefined
    const url = typeof context.values.url === 'string' ? context.values.url : undefined
    const json = context.global.json
    const { c } = context
    // With --json, stdout carries the events only; everything else goes to stderr.
    const info = json ? context.err : context.out
    const { startInspectionRelay } = await import('@signalbox/actors/inspect')
    const { bus, subjects, url: natsUrl } = await openBus(context, 'inspect', { waitForStream: true })
    let relay: Awaited<ReturnType<typeof startInspectionRelay>>
    try {
      relay = await startInspectionRelay({
        bus,
        subjects,
        port,
        ...(url ? { url } : {}),
        ...(record ? { record } : {}),
        ...(json ? { onEvent: (event: InspectorWireEvent) => context.out(JSON.stringify(event)) } : {}),
      })
    } catch (error) {
      await bus.close()
      throw namePortFlag(error, port, '--port')
    }
    const stop = untilSignal(context.io.signal)
    try {
      info(`${c.bold('signalbox inspect')} ${c.dim(`· every runtime on ${subjects.prefix} at ${natsUrl}`)}`)
      info(
        `${c.dim('page  ')} ${c.cyan(relay.pageUrl)} ${c.dim(`(open it in a browser; it embeds ${url ?? STATELY_INSPECTOR_URL})`)}`,
      )
      if (record) info(`${c.dim('record')} ${record} ${c.dim('(JSONL, one event per line)')}`)
      info(`${c.dim('note  ')} ${OFFLINE_NOTE}`)
      info(c.dim('Agents publish with createBusInspector({ bus, subjects }) (docs/inspector.md). Ctrl-C to stop.'))
      await stop.promise
    } finally {
      stop.dispose()
      await relay.stop()
      await bus.close()
    }
    info(
      c.dim(
        `relayed ${relay.relayed} event${relay.relayed === 1 ? '' : 's'}${record ? ` (recorded in ${record})` : ''}${relay.invalid > 0 ? `, ${relay.invalid} invalid dropped` : ''}`,
      ),
    )
    return EXIT.ok
  },
}

function parsePort(value: unknown, fallback: number, context: CommandContext, flag = '--port'): number {
  if (value === undefined) return fallback
  const port = Number(value)
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new UsageError(`${flag} must be a port number (1-65535), got "${String(value)}"`, context.command)
  return port
}

/** A port in use is the person's to fix: name the flag of this command that picks another. */
function namePortFlag(error: unknown, port: number, flag: string): unknown {
  if (!SignalboxError.is(error, ErrorCode.INSPECTOR_PORT_IN_USE)) return error
  return new CliError('INSPECTOR_PORT_IN_USE', `Port ${port} is in use: pick another one with ${flag} <port>.`, {
    cause: error,
  })
}

// ---- for `signalbox run` ----

/** Flags `signalbox run` can spread into its options to offer `--inspect`. */
export const RUN_INSPECT_OPTIONS: Record<string, OptionSpec> = {
  inspect: {
    type: 'boolean',
    description:
      'watch the run in the Stately inspector: embedded, on a local page (--inspect-port) that stays up after the run until Ctrl-C; with --nats, on the bus for signalbox inspect',
  },
  'inspect-port': {
    type: 'string',
    valueName: '<port>',
    description: 'embedded --inspect: port of the local inspector page',
    default: String(DEFAULT_INSPECT_PORT),
  },
  'inspect-contents': {
    type: 'boolean',
    description: 'with --inspect: also send message contents, tool arguments and results (private by default)',
  },
}

export interface RunInspection {
  /** For `createAgent({ inspect })`; undefined without `--inspect`. */
  inspect: Inspector['inspect'] | undefined
  /** The local inspector page (embedded only): it lives in this process. */
  pageUrl?: string
  stop(): Promise<void>
}

/**
 * What `signalbox run --inspect` does: embedded, a local Stately inspector page (its URL is printed);
 * with a bus, the run's inspection goes on the bus for `signalbox inspect`.
 */
export async function startRunInspection(
  context: CommandContext,
  where: { mode: 'embedded' | 'nats'; bus: Bus; subjects: Subjects },
): Promise<RunInspection> {
  if (context.values.inspect !== true) return { inspect: undefined, stop: async () => {} }
  const includeContents = context.values['inspect-contents'] === true
  const info = context.global.json ? context.err : context.out
  const { createBusInspector, createLocalInspector } = await import('@signalbox/actors/inspect')
  if (where.mode === 'nats') {
    const inspector = createBusInspector({ bus: where.bus, subjects: where.subjects, includeContents })
    info(
      context.c.dim(
        `inspect: publishing on ${inspector.subject}; watch with signalbox inspect --prefix ${where.subjects.prefix}`,
      ),
    )
    return { inspect: inspector.inspect, stop: async () => {} }
  }
  const port = parsePort(context.values['inspect-port'], DEFAULT_INSPECT_PORT, context, '--inspect-port')
  let local: Awaited<ReturnType<typeof createLocalInspector>>
  try {
    local = await createLocalInspector({ port, includeContents })
  } catch (error) {
    const named = namePortFlag(error, port, '--inspect-port')
    if (named !== error) throw named
    throw new CliError('INSPECTOR_FAILED', `could not start the inspector page on port ${port}`, { cause: error })
  }
  info(`${context.c.dim('inspect')} ${context.c.cyan(local.url)} ${context.c.dim('(needs internet for the hosted UI)')}`)
  return { inspect: local.inspect, pageUrl: local.url, stop: () => local.stop() }
}
