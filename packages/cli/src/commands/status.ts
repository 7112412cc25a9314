import { ErrorCode, SignalboxError } from '@signalbox/core'
import { openBus } from '../bus.ts'
import { CliError, type Command, EXIT, UsageError } from '../cli.ts'
import { shortId } from '../output.ts'

export const status: Command = {
  name: 'status',
  summary: "show an agent's runs in flight and the state each is in",
  usage: 'status <agent> [flags]',
  description: [
    'Asks the agent (a control request on agents.<agent>.control) for its runs in flight:',
    'run id, the state of its machine (e.g. running.turn.toolCalls.awaitingApproval) and its turn.',
    'Fails when no process serves the agent on the bus.',
  ].join('\n'),
  args: [['<agent>', 'the agent id']],
  options: {
    timeout: { type: 'string', valueName: '<ms>', description: 'how long to wait for the reply', default: '5000' },
  },
  bus: 'required',
  minArgs: 1,
  maxArgs: 1,
  examples: [
    ['signalbox status claw', "the claw agent's runs and their states"],
    ['signalbox status claw --json', 'the raw control.reply message'],
  ],
  async run(context) {
    const agentId = context.positionals[0] as string
    const timeoutMs = parseMs(context.values.timeout, 5_000)
    const { bus, subjects } = await openBus(context, 'status')
    const { sendControl } = await import('@signalbox/actors')
    try {
      const reply = await askAgent(
        () => sendControl({ bus, subjects, agentId, request: { type: 'control.status' }, timeoutMs }),
        agentId,
        subjects.control(agentId),
      )
      if (context.global.json) {
        context.out(JSON.stringify(reply))
        return EXIT.ok
      }
      const { c } = context
      if (reply.runs.length === 0) {
        context.out(`${c.magenta(agentId)} is on the bus, with no run in flight.`)
        return EXIT.ok
      }
      context.out(`${c.magenta(agentId)}: ${reply.runs.length} run${reply.runs.length === 1 ? '' : 's'} in flight`)
      const width = Math.max(...reply.runs.map((r) => r.runId.length))
      for (const r of reply.runs)
        context.out(
          `  ${r.runId.padEnd(width)}  turn ${String(r.turn).padStart(2)}  ${c.cyan(r.state)}  ${c.dim(shortId(r.runId))}`,
        )
      return EXIT.ok
    } finally {
      await bus.close()
    }
  },
}

/** Runs a control request; "nobody answers" becomes a clear AGENT_NOT_FOUND. */
export async function askAgent<T>(request: () => Promise<T>, agentId: string, subject: string): Promise<T> {
  try {
    return await request()
  } catch (error) {
    if (SignalboxError.is(error, ErrorCode.BUS_NO_RESPONDERS)) {
      throw new CliError(
        'AGENT_NOT_FOUND',
        `agent "${agentId}" is not on the bus (nobody answers on ${subject}); is it running, with this --prefix?`,
      )
    }
    throw error
  }
}

export function parseMs(value: unknown, fallback: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`expected a positive number of milliseconds, got "${String(value)}"`)
  return n
}
