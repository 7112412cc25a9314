import { openBus, signerFrom, untilSignal } from '../bus.ts'
import { type Command, EXIT, UsageError } from '../cli.ts'
import { reportRefusedRequests } from '../refused-requests.ts'
import { REVIEWER_TRUST_OPTIONS, reviewerKeyWarnings, reviewerTrustFrom, reviewerTrustLine } from '../trust-flags.ts'

export const DEFAULT_CONSOLE_PORT = 4300

export const consoleCommand: Command = {
  name: 'console',
  summary: 'the reviewer console in a browser: inbox, live statecharts, audit',
  usage: 'console --as <name> [--port <port>] [--agent <id>] [--contents] [flags]',
  description: [
    'Serves a local page (every asset from this machine, nothing from a CDN) for the agents on the',
    'bus: an inbox of pending approvals and questions across agents, newest first, each with the',
    'exact call and a live deadline; approve, deny with a reason, answer, steer or cancel a run.',
    'Decisions made elsewhere, and timeouts, leave the inbox live with who or what settled them.',
    'Each run is drawn as the agent statechart with its current state highlighted (agents publish',
    'their states with `signalbox run --inspect`), with its recent events and its child runs.',
    'Message contents and tool outputs stay hidden unless --contents is passed; the arguments of a',
    'call waiting for approval are always shown (that is what you decide on).',
    'Every console sees every request; the agent applies the first decision.',
    'With --nkey (or NATS_NKEY) every decision, answer, correction and cancel is signed with that',
    'seed. With --agent-key or a --trust policy with an "agents" section, only requests the agents',
    'signed are shown, marked verified; with --trust, a decision or answer settles an item elsewhere',
    'only if signed by one of its reviewers or answerers (a forged one cannot empty the inbox).',
  ].join('\n'),
  options: {
    as: { type: 'string', valueName: '<name>', description: 'who decides here (required; goes into every decision)' },
    port: { type: 'string', valueName: '<port>', description: 'port of the page', default: String(DEFAULT_CONSOLE_PORT) },
    host: { type: 'string', valueName: '<host>', description: 'address to listen on', default: '127.0.0.1' },
    agent: { type: 'string', valueName: '<id>', description: "only this agent's requests and runs", default: 'every agent' },
    contents: { type: 'boolean', description: 'show message contents, tool arguments and outputs in the run view' },
    ...REVIEWER_TRUST_OPTIONS,
  },
  bus: 'required',
  maxArgs: 0,
  examples: [
    ['signalbox console --as tina', 'open http://localhost:4300 and review every agent on the bus'],
    ['signalbox console --as tina --agent claw --port 8090', "only the claw agent's requests, on another port"],
  ],
  async run(context) {
    const name = (context.values.as as string | undefined)?.trim()
    if (!name) throw new UsageError('--as <name> is required: who decides goes into every decision', context.command)
    const port = Number(context.values.port ?? DEFAULT_CONSOLE_PORT)
    if (!Number.isInteger(port) || port < 0 || port > 65_535)
      throw new UsageError(`--port must be a port number (got "${String(context.values.port)}")`, context.command)
    const agentId = context.values.agent as string | undefined
    // Loaded while the flags are read and the bus connects.
    const consoleModule = import('@signalbox/console')
    consoleModule.catch(() => {})
    const reviewerTrust = await reviewerTrustFrom(context, agentId)
    const signer = await signerFrom(context)
    const { bus, subjects, url } = await openBus(context, 'console', { waitForStream: true })
    const stop = untilSignal(context.io.signal)
    const { startConsole } = await consoleModule
    const refusals = reportRefusedRequests({ startedAt: Date.now(), print: context.err })
    try {
      const opened = await startConsole({
        bus,
        subjects,
        reviewer: name,
        port,
        host: (context.values.host as string | undefined) ?? '127.0.0.1',
        ...(agentId ? { agentId } : {}),
        ...(context.values.contents === true ? { includeContents: true } : {}),
        ...(reviewerTrust.trust ? { trust: reviewerTrust.trust } : {}),
        ...(signer ? { signer } : {}),
        onRefused: (requestId, reason, request) => refusals.refused(requestId, reason, request?.requestedAt),
        onError: (error) => context.err(`error: ${error instanceof Error ? error.message : String(error)}`),
      })
      try {
        await Promise.race([opened.ready, stop.promise])
        const signing = signer ? `signing as ${signer.publicKey}` : 'unsigned (no --nkey)'
        const ready = `console for ${agentId ? `agent ${agentId}` : 'every agent'} on ${subjects.prefix} at ${url}, reviewing as ${name}, ${signing}; ${reviewerTrustLine(reviewerTrust)}: ${opened.url}  (Ctrl-C to stop)`
        if (context.global.json) context.out(JSON.stringify({ type: 'console.ready', url: opened.url, reviewer: name }))
        else context.out(ready)
        for (const warning of reviewerKeyWarnings(reviewerTrust.trust, signer, true))
          context.err(`${context.c.yellow('warning')}: ${warning}`)
        await stop.promise
      } finally {
        await opened.close()
        refusals.flush()
      }
    } finally {
      stop.dispose()
      await bus.close()
    }
    return EXIT.ok
  },
}
