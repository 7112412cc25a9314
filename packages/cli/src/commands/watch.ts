import type { AgentEvent } from '@signalbox/core'
import { openBus, untilSignal } from '../bus.ts'
import { type Command, EXIT } from '../cli.ts'
import { eventLine, quote } from '../output.ts'

/** How long a run's text may be quiet before its coalesced line is printed. */
const TEXT_IDLE_MS = 250

export const watch: Command = {
  name: 'watch',
  summary: "tail agents' events, one readable line each",
  usage: 'watch [agent] [--run <runId>] [flags]',
  description: [
    'Prints every event the agents publish (observe only): time, agent, run (short id), event type',
    "and its key fields. A run's streamed text deltas are joined into one line. With --json, the",
    'raw events, one JSON object per line. Runs until Ctrl-C.',
    'Child runs (delegation) are indented under their parent, and a child run start shows its path',
    '(planner › trains); --run <root run> shows the whole tree below it.',
  ].join('\n'),
  args: [['[agent]', 'only this agent (default: every agent on the bus)']],
  options: {
    run: { type: 'string', valueName: '<runId>', description: 'only this run and the runs below it', default: 'every run' },
  },
  bus: 'required',
  maxArgs: 1,
  examples: [
    ['signalbox watch', 'every agent on the bus'],
    ['signalbox watch claw --json | jq .type', 'the claw agent, as JSON'],
  ],
  async run(context) {
    const agentId = context.positionals[0]
    const runFilter = context.values.run as string | undefined
    const { c } = context
    const { bus, subjects, url } = await openBus(context, 'watch', { waitForStream: true })
    const { watchEvents } = await import('@signalbox/actors')
    const pending = new Map<string, { first: AgentEvent; text: string; timer: ReturnType<typeof setTimeout> }>()

    // A child run is indented under its parent: the tree shows at a glance.
    const depth = (e: AgentEvent) => '  '.repeat(Math.min(e.runPath?.length ?? 0, 10))
    const flush = (runId: string) => {
      const entry = pending.get(runId)
      if (!entry) return
      pending.delete(runId)
      clearTimeout(entry.timer)
      context.out(depth(entry.first) + eventLine(entry.first, c, { detail: quote(entry.text, 400) }))
    }

    const onEvent = (event: AgentEvent, meta: { truncated: boolean }) => {
      if (runFilter && event.runId !== runFilter && !event.runPath?.includes(runFilter)) return
      if (context.global.json) {
        context.out(JSON.stringify(meta.truncated ? { ...event, truncated: true } : event))
        return
      }
      if (event.type === 'text.delta') {
        const entry = pending.get(event.runId)
        if (entry) {
          entry.text += event.delta
          entry.timer.refresh()
        } else {
          pending.set(event.runId, { first: event, text: event.delta, timer: setTimeout(() => flush(event.runId), TEXT_IDLE_MS) })
        }
        return
      }
      flush(event.runId)
      const path =
        event.type === 'run.start' && event.agentPath?.length
          ? c.dim(` (${[...event.agentPath, event.agentId].join(' › ')})`)
          : ''
      context.out(depth(event) + eventLine(event, c) + path + (meta.truncated ? c.dim(' (truncated)') : ''))
    }

    const stop = untilSignal(context.io.signal)
    const subscription = watchEvents({ bus, subjects, ...(agentId ? { agentId } : {}), onEvent })
    try {
      await subscription.ready
      const scope = agentId ? `agent ${agentId}` : 'every agent'
      const ready = `watching ${scope}${runFilter ? `, run ${runFilter}` : ''} on ${subjects.prefix} at ${url} (Ctrl-C to stop)`
      if (context.global.json) context.err(ready)
      else context.out(c.dim(ready))
      await stop.promise
    } finally {
      stop.dispose()
      for (const runId of [...pending.keys()]) flush(runId)
      subscription.unsubscribe()
      await bus.close()
    }
    return EXIT.ok
  },
}
