import { openBus, signerFrom } from '../bus.ts'
import { type Command, EXIT } from '../cli.ts'
import { whoIsAt } from '../identity.ts'

export const steer: Command = {
  name: 'steer',
  summary: 'send a correction to a running agent (applied at its next tool call)',
  usage: 'steer <agent> <text...> [--run <runId>] [--from <name>] [flags]',
  description: [
    'Queues a correction for an agent on the bus. The agent applies it at its next tool call:',
    'that call is cancelled and the model reads "Cancelled. The person says: <text>".',
    'The correction travels on the durable path (JetStream), so a server restart does not lose it.',
    'Without --run it goes to every run of the agent in flight.',
    'With --nkey (or NATS_NKEY) the correction is signed with that seed; an agent with a trust',
    'policy applies only corrections signed by a key it lists in `steerers`.',
  ].join('\n'),
  args: [
    ['<agent>', 'the agent id (as in `signalbox watch`)'],
    ['<text...>', 'the correction; the rest of the line'],
  ],
  options: {
    run: { type: 'string', valueName: '<runId>', description: 'only this run of the agent', default: 'every run in flight' },
    from: {
      type: 'string',
      valueName: '<name>',
      description: 'who is steering (shown to the model and in the audit); required when $USER is not set',
      default: '$USER',
    },
  },
  bus: 'required',
  minArgs: 2,
  examples: [
    ['signalbox steer claw "No, wait! The penguin!"', 'the claw agent switches prize at its next tool call'],
    ['signalbox steer billing stop refunding --run run_3f2a9c1e --from ops', 'one run only, signed "ops"'],
  ],
  async run(context) {
    const [agentId, ...words] = context.positionals as [string, ...string[]]
    const text = words.join(' ').trim()
    const runId = context.values.run as string | undefined
    const signer = await signerFrom(context)
    const { bus, subjects } = await openBus(context, 'steer')
    let from: string
    try {
      from = whoIsAt(context, ['from'])
    } catch (error) {
      await bus.close()
      throw error
    }
    const [{ sendControl, sendSteering }, { BusNoRespondersError }] = await Promise.all([
      import('@signalbox/actors'),
      import('@signalbox/core/bus'),
    ])
    try {
      // Steering is stored durably, but an agent only reads corrections sent while it is connected.
      let present = true
      try {
        await sendControl({ bus, subjects, agentId, request: { type: 'control.status' }, timeoutMs: 2_000 })
      } catch (error) {
        if (!BusNoRespondersError.is(error)) throw error
        present = false
      }
      // Signed with the --nkey seed: agents with a trust policy refuse unsigned corrections.
      const message = await sendSteering({
        bus,
        subjects,
        agentId,
        text,
        from,
        ...(runId ? { runId } : {}),
        ...(signer ? { signer } : {}),
      })
      if (context.global.json) {
        context.out(JSON.stringify({ ...message, agentOnline: present }))
      } else {
        const target = runId ? `run ${runId} of ${agentId}` : `every run of ${agentId}`
        context.out(
          `${context.c.green('✔ queued')} ${JSON.stringify(text)} for ${target} from ${from} ${context.c.dim(`(${message.steerId})`)}`,
        )
      }
      if (!present) {
        context.err(
          `${context.c.yellow('warning')}: agent "${agentId}" is not on the bus right now (no reply on ${subjects.control(agentId)}); only runs connected when a correction is sent receive it.`,
        )
      }
      return EXIT.ok
    } finally {
      await bus.close()
    }
  },
}
