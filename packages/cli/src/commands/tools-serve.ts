import { openBus, untilSignal } from '../bus.ts'
import { type Command, EXIT, UsageError } from '../cli.ts'
import { clockTime, formatElapsed, shortId } from '../output.ts'
import { commandTracing, OTLP_OPTIONS } from '../tracing.ts'

/** `TOOL_QUEUE_GROUP` of @signalbox/actors (a test keeps them equal; not imported so help stays fast). */
export const DEFAULT_TOOL_QUEUE = 'signalbox-tools'

export const toolsServe: Command = {
  name: 'tools serve',
  summary: 'host the tools a module exports, for agents on the bus',
  usage: 'tools serve <module> | --mcp "<command>" [--approve <tools>] [--queue <group>] [flags]',
  description: [
    'Loads a module that exports tools (`export const tools = [...]` or `export default [...]`,',
    'made with tool() from @signalbox/core) and serves each on tools.<name> (and its description on',
    'tools.<name>.describe). Arguments are validated; results and typed errors go back as data.',
    'With --mcp it serves the tools of an MCP server instead: a command line (started, and stopped',
    'with the host) or an http(s):// URL (Streamable HTTP); --approve names the tools that need a',
    "reviewer's yes (comma-separated, or all).",
    'Hosts in the same queue group share the calls. Prints each call and its outcome.',
    'Ctrl-C or SIGTERM stops taking calls, aborts running ones and drains the connection.',
  ].join('\n'),
  args: [['<module>', 'path to the tools module (.ts or .js)']],
  options: {
    mcp: { type: 'string', valueName: '<command>', description: 'serve the tools of this MCP server (command line or URL)' },
    approve: { type: 'string', valueName: '<tools>', description: 'with --mcp: tools that need approval (a,b or all)' },
    queue: {
      type: 'string',
      valueName: '<group>',
      description: 'queue group shared with other hosts',
      default: DEFAULT_TOOL_QUEUE,
    },
    ...OTLP_OPTIONS,
  },
  bus: 'required',
  minArgs: 0,
  maxArgs: 1,
  examples: [
    ['signalbox tools serve examples/distributed/claw-tools.ts', 'serve move_claw and drop_claw'],
    ['signalbox tools serve ./tools.ts --queue gpu-box --nats nats://10.0.0.5:4222', 'a second pool of hosts'],
    [
      'signalbox tools serve --mcp "npx @modelcontextprotocol/server-filesystem /srv/docs" --approve write_file',
      'an MCP server for every agent',
    ],
  ],
  async run(context) {
    const { c } = context
    const spec = context.positionals[0]
    const mcp = context.values.mcp as string | undefined
    if ((spec === undefined) === (mcp === undefined)) throw new UsageError('give a tools module or --mcp "<command>"', toolsServe)
    const source =
      mcp === undefined
        ? {
            ...(await (await import('../load-module.ts')).loadToolsModule(spec as string, context.io.cwd)),
            close: async () => {},
          }
        : await (await import('../mcp-source.ts')).loadMcpTools(
            mcp,
            context.values.approve as string | undefined,
            context.io.signal,
          )
    const { tools } = source
    const queue = (context.values.queue as string | undefined) ?? DEFAULT_TOOL_QUEUE
    const { serveTools } = await import('@signalbox/actors')
    const tracing = await commandTracing(context, 'signalbox-tools')
    const opened = await openBus(context, 'tools')
    const { subjects, url } = opened
    const bus = tracing ? tracing.bus(opened.bus) : opened.bus
    const log = (record: Record<string, unknown>, text: string) =>
      context.out(context.global.json ? JSON.stringify(record) : text)
    const host = serveTools({
      bus,
      subjects,
      tools: tracing ? tracing.tools(tools) : tools,
      queue,
      onCall: (call) => {
        log(
          { type: 'tool.call', at: Date.now(), ...call },
          `${c.dim(clockTime(Date.now()))} ${c.green('→ call'.padEnd(8))} ${c.bold(call.toolName)} ${c.dim(`${call.callId} · agent ${call.agentId} · ${shortId(call.runId)}`)}`,
        )
      },
      onResult: (call, outcome) => {
        const label = (outcome.ok ? '← ok' : `← ${outcome.error?.code ?? 'error'}`).padEnd(8)
        const verdict = outcome.ok ? c.green(label) : c.red(label)
        const why = outcome.error ? ` ${outcome.error.message}` : ''
        log(
          { type: 'tool.result', at: Date.now(), ...call, ...outcome },
          `${c.dim(clockTime(Date.now()))} ${verdict} ${c.bold(call.toolName)} ${c.dim(`${call.callId} · ${formatElapsed(outcome.durationMs)}`)}${why}`,
        )
      },
    })
    const stop = untilSignal(context.io.signal)
    try {
      await host.ready
      const names = tools.map((t) => `${t.name}${t.needsApproval ? c.dim(' (needs approval)') : ''}`).join(', ')
      const ready = `serving ${tools.length} tool${tools.length === 1 ? '' : 's'}: ${names} on ${subjects.prefix}.tools.* at ${url} (queue ${queue}; Ctrl-C to stop)`
      if (context.global.json) context.err(ready)
      else context.out(ready)
      const signal = await stop.promise
      const running = host.running
      context.err(
        `${signal}: stopping${running > 0 ? ` (${running} call${running === 1 ? '' : 's'} in flight are aborted)` : ''}`,
      )
    } finally {
      stop.dispose()
      host.close()
      await source.close()
      await bus.close()
      await tracing?.shutdown()
    }
    context.err('tool host stopped')
    return EXIT.ok
  },
}
