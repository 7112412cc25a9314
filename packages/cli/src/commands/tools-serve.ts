import { openBus, untilSignal } from '../bus.ts'
import { type Command, EXIT } from '../cli.ts'
import { clockTime, formatDuration, shortId } from '../output.ts'

/** `TOOL_QUEUE_GROUP` of @signalbox/actors (a test keeps them equal; not imported so help stays fast). */
export const DEFAULT_TOOL_QUEUE = 'signalbox-tools'

export const toolsServe: Command = {
  name: 'tools serve',
  summary: 'host the tools a module exports, for agents on the bus',
  usage: 'tools serve <module> [--queue <group>] [flags]',
  description: [
    'Loads a module that exports tools (`export const tools = [...]` or `export default [...]`,',
    'made with tool() from @signalbox/core) and serves each on tools.<name> (and its description on',
    'tools.<name>.describe). Arguments are validated; results and typed errors go back as data.',
    'Hosts in the same queue group share the calls. Prints each call and its outcome.',
    'Ctrl-C or SIGTERM stops taking calls, aborts running ones and drains the connection.',
  ].join('\n'),
  args: [['<module>', 'path to the tools module (.ts or .js)']],
  options: {
    queue: {
      type: 'string',
      valueName: '<group>',
      description: 'queue group shared with other hosts',
      default: DEFAULT_TOOL_QUEUE,
    },
  },
  bus: 'required',
  minArgs: 1,
  maxArgs: 1,
  examples: [
    ['signalbox tools serve examples/distributed/claw-tools.ts', 'serve move_claw and drop_claw'],
    ['signalbox tools serve ./tools.ts --queue gpu-box --nats nats://10.0.0.5:4222', 'a second pool of hosts'],
  ],
  async run(context) {
    const { c } = context
    const spec = context.positionals[0] as string
    const { loadToolsModule } = await import('../load-module.ts')
    const { tools } = await loadToolsModule(spec, context.io.cwd)
    const queue = (context.values.queue as string | undefined) ?? DEFAULT_TOOL_QUEUE
    const { serveTools } = await import('@signalbox/actors')
    const { bus, subjects, url } = await openBus(context, 'tools')
    const log = (record: Record<string, unknown>, text: string) =>
      context.out(context.global.json ? JSON.stringify(record) : text)
    const host = serveTools({
      bus,
      subjects,
      tools,
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
          `${c.dim(clockTime(Date.now()))} ${verdict} ${c.bold(call.toolName)} ${c.dim(`${call.callId} · ${formatDuration(outcome.durationMs)}`)}${why}`,
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
      await bus.close()
    }
    context.err('tool host stopped')
    return EXIT.ok
  },
}
