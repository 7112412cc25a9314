import { openBus, untilSignal } from '../bus.ts'
import { CliError, type Command, EXIT, NO_BUS_MESSAGE, UsageError } from '../cli.ts'
import { type Colors, clockTime, formatElapsed, shortId } from '../output.ts'
import { commandTracing, OTLP_OPTIONS } from '../tracing.ts'
import { agentTrustFrom } from '../trust-flags.ts'

type Tool = import('@signalbox/core').Tool<any>
type TrustPolicy = import('@signalbox/actors/trust').TrustPolicy

/** `TOOL_QUEUE_GROUP` of @signalbox/actors (a test keeps them equal; not imported so help stays fast). */
export const DEFAULT_TOOL_QUEUE = 'signalbox-tools'
/** `DEFAULT_APPROVAL_CLOCK_SKEW_MS` of @signalbox/actors (the same, kept equal by the same test). */
export const DEFAULT_CLOCK_SKEW_MS = 30_000

export const toolsServe: Command = {
  name: 'tools serve',
  summary: 'host the tools a module exports, for agents on the bus',
  usage:
    'tools serve <module> | --mcp "<command>" [--allow|--deny <tools>] [--approve <tools>] [--trust <file>] [--queue <group>] [flags]',
  description: [
    'Loads a module that exports tools (`export const tools = [...]` or `export default [...]`,',
    'made with tool() from @signalbox/core) and serves each on tools.<name> (and its description on',
    'tools.<name>.describe). Arguments are validated; results and typed errors go back as data.',
    'With --mcp it serves the tools of an MCP server instead: a command line (started, and stopped',
    'with the host) or an http(s):// URL (Streamable HTTP).',
    "--approve names tools that need a reviewer's yes (comma-separated, or all), besides those the",
    'module marks with needsApproval (or, for an MCP server, those its annotations mark destructive).',
    "--allow / --deny choose which of an MCP server's tools are served.",
    '',
    'Without --trust the host does NOT verify approvals: it tells agents which tools need one and',
    "runs whatever call it is sent, so the approval gate is the agent's alone (a modified agent, or",
    'any client allowed to publish tool calls, runs a gated tool without anyone approving).',
    'With --trust FILE the host enforces: a call of a tool that needs approval runs only if it',
    "carries the reviewer's signed decision approving exactly that call (its call id and arguments,",
    'or the edit the reviewer signed), signed by a key the policy lists among the reviewers of that',
    'tool, before its deadline (give or take --clock-skew), and not used for another call. Anything',
    'else is refused (APPROVAL_REQUIRED / APPROVAL_INVALID, the model reads why), printed, and',
    "audited as tool.refused (signed with --signing-key). The file is the agents' trust policy",
    'format; only its keys and reviewers are used here.',
    '',
    'Hosts in the same queue group share the calls. Prints each call and its outcome.',
    'Ctrl-C or SIGTERM stops taking calls, aborts running ones and drains the connection.',
  ].join('\n'),
  args: [['<module>', 'path to the tools module (.ts or .js)']],
  options: {
    mcp: { type: 'string', valueName: '<command>', description: 'serve the tools of this MCP server (command line or URL)' },
    allow: { type: 'string', valueName: '<tools>', description: 'with --mcp: serve only these of its tools (a,b)' },
    deny: { type: 'string', valueName: '<tools>', description: 'with --mcp: serve all of its tools but these (a,b)' },
    approve: {
      type: 'string',
      valueName: '<tools>',
      description: "tools that need a reviewer's yes (a,b or all), besides the module's own",
    },
    trust: {
      type: 'string',
      valueName: '<file>',
      description:
        "enforce approvals: run a gated call only with a decision signed by one of the tool's reviewers in this trust policy (JSON)",
      default: '$SIGNALBOX_TRUST, else not verified: the agent decides',
    },
    'signing-key': {
      type: 'string',
      valueName: '<file>',
      description: "the host's nkey seed: signs its tool.refused audit entries",
      default: '$SIGNALBOX_SIGNING_KEY, else the --nkey seed, else unsigned',
    },
    'ledger-bucket': {
      type: 'string',
      valueName: '<name>',
      description: 'with --trust: the KV bucket where the hosts of the pool remember the approvals they used',
      default: 'signalbox_used_approvals (_<prefix> for another prefix)',
    },
    replicas: {
      type: 'string',
      valueName: '<1|3|5>',
      description: "copies of the deployment's stream and (with --trust) the used-approval bucket on a JetStream cluster",
      default: '1',
      choices: ['1', '3', '5'],
    },
    'clock-skew': {
      type: 'string',
      valueName: '<ms>',
      description:
        "with --trust: how far the agents' clocks may be from this host's (a decision counts until its deadline plus this)",
      default: String(DEFAULT_CLOCK_SKEW_MS),
    },
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
      'signalbox tools serve examples/distributed/claw-tools.ts --approve drop_claw --trust trust.json',
      "run drop_claw only with a reviewer's signed approval of the exact call",
    ],
    [
      'signalbox tools serve --mcp "npx @modelcontextprotocol/server-filesystem /srv/docs" --approve write_file --trust trust.json',
      'an MCP server for every agent, its writes approved by a person',
    ],
  ],
  async run(context) {
    const { c } = context
    const spec = context.positionals[0]
    const mcp = context.values.mcp as string | undefined
    if ((spec === undefined) === (mcp === undefined)) throw new UsageError('give a tools module or --mcp "<command>"', toolsServe)
    // Before the trust files are read: their errors speak of a bus this command must have anyway.
    if (!context.global.nats) throw new CliError('NO_BUS', NO_BUS_MESSAGE)
    const approve = context.values.approve as string | undefined
    const filter = { allow: context.values.allow as string | undefined, deny: context.values.deny as string | undefined }
    if (mcp === undefined && (filter.allow !== undefined || filter.deny !== undefined))
      throw new UsageError('--allow and --deny pick the tools of an MCP server: give --mcp "<command>"', toolsServe)
    const clockSkewMs = parseSkew(context.values['clock-skew'])
    const { trust, signer, trustFile } = await agentTrustFrom(context)
    if (clockSkewMs !== undefined && trust === undefined)
      throw new UsageError('--clock-skew is for a host that verifies approvals: give --trust <file>', toolsServe)
    const ledgerFlag = context.values['ledger-bucket'] as string | undefined
    if (ledgerFlag !== undefined && trust === undefined)
      throw new UsageError('--ledger-bucket is for a host that verifies approvals: give --trust <file>', toolsServe)
    const source =
      mcp === undefined
        ? await moduleSource(spec as string, approve, context.io.cwd)
        : await (await import('../mcp-source.ts')).loadMcpTools(mcp, approve, context.io.signal, filter)
    const { tools } = source
    const queue = (context.values.queue as string | undefined) ?? DEFAULT_TOOL_QUEUE
    const [{ serveTools, busAuditLog }, { signedAuditLog }] = await Promise.all([
      import('@signalbox/actors'),
      import('@signalbox/actors/trust'),
    ])
    const tracing = await commandTracing(context, 'signalbox-tools')
    if (tracing && 'mcp' in source) tracing.mcp(source.mcp as import('@signalbox/otel').InstrumentableMcp)
    const replicas = Number(context.values.replicas ?? 1) as 1 | 3 | 5
    const opened = await openBus(context, 'tools', { waitForStream: true, ...(replicas > 1 ? { replicas } : {}) })
    const { subjects, url } = opened
    const bus = tracing ? tracing.bus(opened.bus) : opened.bus
    const log = (record: Record<string, unknown>, text: string) =>
      context.out(context.global.json ? JSON.stringify(record) : text)
    const audit = trust ? busAuditLog({ bus, subjects }) : undefined
    const host = serveTools({
      bus,
      subjects,
      tools: tracing ? tracing.tools(tools) : tools,
      queue,
      ...(trust && audit
        ? {
            approvals: {
              trust,
              audit: signer ? signedAuditLog({ log: audit, signer }) : audit,
              ...(clockSkewMs !== undefined ? { clockSkewMs } : {}),
              ledger: { ...(ledgerFlag !== undefined ? { bucket: ledgerFlag } : {}), ...(replicas > 1 ? { replicas } : {}) },
            },
          }
        : {}),
      onRefused: (call, refusal) => {
        log(
          { type: 'tool.refused', at: Date.now(), ...call, code: refusal.code, reason: refusal.reason, message: refusal.message },
          `${c.dim(clockTime(Date.now()))} ${c.red('✘ refused'.padEnd(8))} ${c.bold(call.toolName)} ${c.dim(`${call.callId} · agent ${call.agentId} · ${shortId(call.runId)}`)} ${c.red(`${refusal.code} ${refusal.reason}`)}: ${refusal.message}`,
        )
      },
      onError: (error) => context.err(`${c.yellow('warning')}: ${error instanceof Error ? error.message : String(error)}`),
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
      const ledgerBucket = ledgerFlag ?? (await import('@signalbox/core/bus')).usedApprovalsBucket(subjects.prefix)
      for (const line of approvalLines(tools, trust, trustFile, signer?.publicKey, clockSkewMs, ledgerBucket))
        context.err(line(c))
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

/** `--clock-skew <ms>`: undefined when not given; 0 or more. */
function parseSkew(value: unknown): number | undefined {
  if (value === undefined) return undefined
  const ms = Number(value)
  if (!Number.isInteger(ms) || ms < 0)
    throw new UsageError(`--clock-skew: expected 0 or more milliseconds, got "${String(value)}"`, toolsServe)
  return ms
}

/** A tools module, with the tools `--approve` names marked as needing approval (a name it lacks is an error). */
async function moduleSource(spec: string, approve: string | undefined, cwd: string) {
  const { tools } = await (await import('../load-module.ts')).loadToolsModule(spec, cwd, [
    import('@signalbox/actors'),
    import('@signalbox/actors/nats'),
    import('@signalbox/actors/trust'),
    import('@signalbox/core/bus'),
  ])
  const names = (approve ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '')
  const all = names.includes('all')
  const unknown = names.filter((n) => n !== 'all' && !tools.some((t) => t.name === n))
  if (unknown.length > 0)
    throw new CliError(
      'CONFIG_INVALID',
      `--approve names ${unknown.map((n) => `"${n}"`).join(', ')}, which ${spec} does not export (its tools: ${tools.map((t) => t.name).join(', ')})`,
    )
  // A tool may be a class instance: keep its prototype (validate, execute) by delegating to it.
  const marked = tools.map((t) =>
    all || names.includes(t.name) ? Object.defineProperty(Object.create(t) as Tool, 'needsApproval', { value: true }) : t,
  )
  return { tools: marked, close: async () => {} }
}

/**
 * What the banner says about approvals: who verifies them, and what the policy leaves unapprovable
 * (a gated tool none of whose reviewers the policy names refuses every call).
 */
function approvalLines(
  tools: Tool[],
  trust: TrustPolicy | undefined,
  trustFile: string | undefined,
  signerKey: string | undefined,
  clockSkewMs: number | undefined,
  ledgerBucket: string,
): ((c: Colors) => string)[] {
  const gated = tools.filter((t) => t.needsApproval !== undefined && t.needsApproval !== false).map((t) => t.name)
  if (trust === undefined) {
    if (gated.length === 0) return []
    return [
      (c) =>
        `${c.yellow('approvals not verified')}: ${gated.join(', ')} run${gated.length === 1 ? 's' : ''} whenever called; the agent alone asks for approval (give --trust <file> to enforce it here)`,
    ]
  }
  if (gated.length === 0)
    return [(c) => `${c.yellow('warning')}: --trust given, but no tool needs approval (use --approve): nothing is enforced`]
  const lines: ((c: Colors) => string)[] = [
    (c) =>
      `${c.green('enforcing approvals')} for ${gated.join(', ')}: signed decisions checked against ${trustFile ?? 'the trust policy'} (clock skew ${clockSkewMs ?? DEFAULT_CLOCK_SKEW_MS} ms); refusals audited${signerKey ? `, signed as ${signerKey}` : ' (unsigned: no --signing-key)'}`,
    // Every host of the deployment shares it: a decision used at one is refused at all.
    (c) => c.dim(`used approvals remembered in the KV bucket ${ledgerBucket}, for every host of the pool`),
  ]
  const { reviewers } = trust.options
  for (const name of gated) {
    if (reviewersOf(reviewers, name).length === 0)
      lines.push(
        (c) => `${c.yellow('warning')}: the trust policy names no reviewer for ${name}: every call of it will be refused`,
      )
  }
  return lines
}

/** The keys a policy's `reviewers` allow for `tool` (a tool's own list replaces the `*` list). */
function reviewersOf(reviewers: TrustPolicy['options']['reviewers'], tool: string): readonly string[] {
  if (reviewers === undefined) return []
  if (Array.isArray(reviewers)) return reviewers
  const byTool = reviewers as Readonly<Record<string, readonly string[]>>
  return (Object.hasOwn(byTool, tool) ? byTool[tool] : byTool['*']) ?? []
}
