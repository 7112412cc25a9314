import { ErrorCode, SignalboxError } from '@signalbox/core'
import { openBus, signerFrom } from '../bus.ts'
import { type Command, type CommandContext, EXIT } from '../cli.ts'
import { whoIsAt } from '../identity.ts'

/** How long to wait for the agent to say which runs it has in flight. */
const STATUS_TIMEOUT_MS = 2_000

export const steer: Command = {
  name: 'steer',
  summary: 'send a correction to a running agent (applied at its next tool call)',
  usage: 'steer <agent> <text...> [--run <runId>] [--as <name>] [flags]',
  description: [
    'Queues a correction for an agent on the bus. The agent applies it at its next tool call:',
    'that call is cancelled and the model reads "Cancelled. The person says: <text>".',
    'The correction travels on the durable path (JetStream), so a server restart does not lose it.',
    'Without --run it goes to every run of the agent in flight (none in flight: its next run).',
    'The agent is asked first which runs it has in flight, and the command says who will apply the',
    'correction. With no process of the agent on the bus nothing applies it now: a process started',
    'later reads only corrections sent while it is connected, except that a run kept in a run store',
    'reads, when it resumes, the ones aimed at it (--run) and the ones for every run sent since it began.',
    'With --nkey (or NATS_NKEY) the correction is signed with that seed; an agent with a trust',
    'policy applies only corrections signed by a key it lists in `steerers`.',
  ].join('\n'),
  args: [
    ['<agent>', 'the agent id (as in `signalbox watch`)'],
    ['<text...>', 'the correction; the rest of the line'],
  ],
  options: {
    run: { type: 'string', valueName: '<runId>', description: 'only this run of the agent', default: 'every run in flight' },
    as: {
      type: 'string',
      valueName: '<name>',
      description: 'who is steering (shown to the model and in the audit); required when $USER is not set',
      default: '$USER',
      aliases: ['from'],
    },
  },
  bus: 'required',
  minArgs: 2,
  examples: [
    ['signalbox steer claw "No, wait! The penguin!"', 'the claw agent switches prize at its next tool call'],
    ['signalbox steer billing stop refunding --run run_3f2a9c1e --as ops', 'one run only, signed "ops"'],
  ],
  async run(context) {
    const [agentId, ...words] = context.positionals as [string, ...string[]]
    const text = words.join(' ').trim()
    const runId = context.values.run as string | undefined
    const from = whoIsAt(context)
    const signer = await signerFrom(context)
    const { bus, subjects } = await openBus(context, 'steer')
    const { sendControl, sendSteering } = await import('@signalbox/actors')
    try {
      // Who is there to apply it: every process of the agent answers control.status (read-only).
      let inFlight: string[] | undefined
      let unknown = false
      try {
        const reply = await sendControl({
          bus,
          subjects,
          agentId,
          request: { type: 'control.status' },
          timeoutMs: STATUS_TIMEOUT_MS,
        })
        inFlight = reply.runs.map((run) => run.runId)
      } catch (error) {
        if (SignalboxError.is(error, ErrorCode.BUS_TIMEOUT)) unknown = true
        else if (!SignalboxError.is(error, ErrorCode.BUS_NO_RESPONDERS)) throw error
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
      const reach = reachOf(agentId, runId, unknown ? 'unknown' : inFlight)
      if (context.global.json) {
        context.out(
          JSON.stringify({
            ...message,
            agentOnline: inFlight !== undefined,
            ...(inFlight ? { runsInFlight: inFlight } : {}),
            appliedBy: reach.appliedBy,
          }),
        )
      } else {
        printReach(context, reach, text, from, message.steerId)
      }
      if (reach.note) context.err(`${context.c.yellow('warning')}: ${reach.note}`)
      return EXIT.ok
    } finally {
      await bus.close()
    }
  },
}

/** Who applies a correction, as far as the agent's answer (or silence) tells. */
export interface Reach {
  /**
   * `runs`: the runs in flight named (at their next tool call); `next-run`: the agent's next run;
   * `nobody-now`: no process of the agent is there (or it has no such run), so nothing applies it
   * now; `unknown`: the agent did not answer in time.
   */
  appliedBy: 'runs' | 'next-run' | 'nobody-now' | 'unknown'
  line: string
  /** What else is true and worth knowing (a warning, printed on stderr). */
  note?: string
}

export function reachOf(agentId: string, runId: string | undefined, inFlight: string[] | 'unknown' | undefined): Reach {
  if (inFlight === 'unknown') {
    return {
      appliedBy: 'unknown',
      line: `for ${runId ? `run ${runId} of ${agentId}` : `every run of ${agentId} in flight`}`,
      note: `agent "${agentId}" did not say which runs it has in flight (no reply in ${STATUS_TIMEOUT_MS / 1000} s): it applies the correction to its runs in flight if it is there.`,
    }
  }
  if (inFlight === undefined) {
    return {
      appliedBy: 'nobody-now',
      line: runId ? `for run ${runId} of ${agentId}` : `for ${agentId}`,
      note: runId
        ? `no process of agent "${agentId}" is on the bus right now: nothing applies it now. If run ${runId} is kept in a run store, it applies the correction when a process started from now on resumes it.`
        : `no process of agent "${agentId}" is on the bus right now: nothing applies it now. Its runs kept in a run store apply it when a process started from now on resumes them (signalbox runs lists them); runs started later do not read it.`,
    }
  }
  if (runId !== undefined) {
    return inFlight.includes(runId)
      ? { appliedBy: 'runs', line: `for run ${runId} of ${agentId}: applied at its next tool call` }
      : {
          appliedBy: 'nobody-now',
          line: `for run ${runId} of ${agentId}`,
          note: `agent "${agentId}" has no run ${runId} in flight (${inFlight.length === 0 ? 'none in flight' : `in flight: ${inFlight.join(', ')}`}), so it does not apply it.`,
        }
  }
  if (inFlight.length === 0) {
    return { appliedBy: 'next-run', line: `for ${agentId}: no run in flight, so its next run starts with it` }
  }
  const runs = inFlight.length === 1 ? `run ${inFlight[0]}` : `${inFlight.length} runs (${inFlight.join(', ')})`
  return { appliedBy: 'runs', line: `for ${runs} of ${agentId} in flight: applied at the next tool call` }
}

function printReach(context: CommandContext, reach: Reach, text: string, from: string, steerId: string): void {
  const { c } = context
  const applied = reach.appliedBy === 'runs' || reach.appliedBy === 'next-run'
  const head = applied ? c.green('✔ queued') : c.yellow('queued (durably)')
  context.out(`${head} ${JSON.stringify(text)} from ${from} ${reach.line} ${c.dim(`(${steerId})`)}`)
}
