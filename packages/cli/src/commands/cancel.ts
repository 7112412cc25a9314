import { openBus, signerFrom } from '../bus.ts'
import { CliError, type Command, EXIT } from '../cli.ts'
import { whoIsAt } from '../identity.ts'
import { askAgent, parseMs } from './status.ts'

export const cancel: Command = {
  name: 'cancel',
  summary: "cancel an agent's runs (all in flight, or one)",
  usage: 'cancel <agent> [--run <runId>] [--reason <text>] [--as <name>] [flags]',
  description: [
    'Sends a control.cancel request to the agent: its model calls and tools are aborted and the',
    'runs end with status "cancelled" (`signalbox run` exits 130). Prints which runs were cancelled.',
  ].join('\n'),
  args: [['<agent>', 'the agent id']],
  options: {
    run: { type: 'string', valueName: '<runId>', description: 'only this run', default: 'every run in flight' },
    reason: { type: 'string', valueName: '<text>', description: 'why (kept with the run)', default: 'cancelled by <you>' },
    as: {
      type: 'string',
      valueName: '<name>',
      description: 'who cancels (kept with the run and in the audit); required when $USER is not set',
      default: '$USER',
      aliases: ['from'],
    },
    timeout: { type: 'string', valueName: '<ms>', description: 'how long to wait for the reply', default: '5000' },
  },
  bus: 'required',
  minArgs: 1,
  maxArgs: 1,
  examples: [
    ['signalbox cancel claw', 'cancel every run of the claw agent'],
    ['signalbox cancel claw --run run_3f2a9c1e --reason "wrong prize"', 'one run, with a reason'],
  ],
  async run(context) {
    const agentId = context.positionals[0] as string
    const runId = context.values.run as string | undefined
    const from = whoIsAt(context)
    const reason = context.values.reason as string | undefined
    const timeoutMs = parseMs(context.values.timeout, 5_000)
    const signer = await signerFrom(context)
    const { bus, subjects } = await openBus(context, 'cancel')
    const { sendControl } = await import('@signalbox/actors')
    try {
      const request = { type: 'control.cancel' as const, from, ...(runId ? { runId } : {}), ...(reason ? { reason } : {}) }
      const reply = await askAgent(
        // Signed with the --nkey seed: agents with a trust policy refuse unsigned cancels.
        () => sendControl({ bus, subjects, agentId, request, timeoutMs, ...(signer ? { signer } : {}) }),
        agentId,
        subjects.control(agentId),
      )
      const cancelled = reply.cancelled ?? []
      if (context.global.json) {
        context.out(JSON.stringify(reply))
      } else if (cancelled.length === 0 && !runId) {
        context.out(`nothing to cancel: ${agentId} has no run in flight`)
      } else {
        for (const id of cancelled) context.out(`${context.c.yellow('✘ cancelled')} ${agentId} ${id}`)
      }
      if (runId && !cancelled.includes(runId))
        throw new CliError('RUN_NOT_FOUND', `agent "${agentId}" has no run ${runId} in flight`)
      return EXIT.ok
    } finally {
      await bus.close()
    }
  },
}
