/**
 * `signalbox host <module>`: an agent host process. Loads the agents a module exports, adds them
 * to an agent system and serves them on the bus: run requests from parents anywhere (delegation,
 * hand-off), events out, steering and control in, and a directory entry per agent.
 */
import type { Agent } from '@signalbox/core'
import { type Bus, directoryBucket, type Subjects } from '@signalbox/core/bus'
import type { AgentModule } from '../agent-module.ts'
import { openBus, untilSignal } from '../bus.ts'
import { CliError, type Command, type CommandContext, EXIT, UsageError } from '../cli.ts'
import { clockTime, handedOff, shortId, statusColor } from '../output.ts'
import { commandTracing, OTLP_OPTIONS } from '../tracing.ts'
import { agentTrustFrom, TRUST_OPTIONS, trustLine } from '../trust-flags.ts'

/** What a host module's factory receives: `export default (host) => [createHotelAgent({ reviewer: ... })]`. */
export interface HostContext {
  bus: Bus
  subjects: Subjects
  /** The system the agents join (for `delegateTool(host.system, 'other-agent')`). */
  system: import('@signalbox/actors/system').AgentSystem
  /** `--scripted`: play scripted models, offline. */
  scripted: boolean
  /** This host's id on the bus. */
  hostId: string
  /** Runs `cleanup` when the host stops (after its runs ended, before the bus closes), e.g. a model server. */
  onClose(cleanup: () => unknown): void
  /** The run store of `--store` / `--run-bucket`, for `createAgent({ store })`; undefined without one. */
  store: import('@signalbox/core/store').RunStore | undefined
  /**
   * The policy of `--trust` (for `remoteReviewer({ trust })`, `remoteAnswerer({ trust })`); the
   * host already checks steering and cancels of every agent it serves against it. Undefined without one.
   */
  trust: import('@signalbox/actors/trust').TrustPolicy | undefined
  /** The key of `--signing-key` (for `remoteReviewer({ signer })`, `signedAuditLog`); undefined without one. */
  signer: import('@signalbox/actors/trust').Signer | undefined
  /** Where accepted signed messages wait for their audit entry (`signedAuditLog({ evidence })`). */
  evidence: import('@signalbox/actors/trust').EvidenceBook
}

type Exported = Agent | AgentModule
type HostExport = Exported | Exported[] | ((host: HostContext) => Exported | Exported[] | Promise<Exported | Exported[]>)

export const host: Command = {
  name: 'host',
  summary: 'serve the agents a module exports, for parents and clients on the bus',
  usage: 'host <module> [--scripted] [--host-id <id>] [flags]',
  description: [
    'Loads a module that exports agents (`export default [agent, ...]`, `export const agents = ...`,',
    'agent modules made with defineAgentModule, or a function `(host) => agents` that receives',
    '{ bus, subjects, system, scripted, hostId, onClose }) and serves each on agents.<id>.run:',
    'any agent or client on the bus can run it by id (delegation, hand-off) without knowing where.',
    'Events go out on agents.<id>.events.*, steering and control come in; each agent is announced',
    'in the directory (a NATS KV bucket). A run whose parent stops sending heartbeats is cancelled',
    'when its lease runs out. Ctrl-C or SIGTERM cancels the runs in flight (their parents are told),',
    'withdraws the directory entries and drains the connection. With a run store (--store or',
    '--run-bucket) every agent it serves keeps its runs there (agent modules get the store, the',
    'host id and the lease; a factory passes `host.store` to createAgent), and the host resumes the',
    'stored runs of its agents on start and, every half lease, takes over the runs whose host',
    'stopped renewing its lease (one host wins each run). On a JetStream cluster, --replicas 3',
    'keeps the stream, the run bucket and the directory in three copies: the loss of a node loses no run.',
    'With --trust FILE (a JSON trust policy, docs/security.md) steering and cancels of every agent',
    'served, and decisions and answers of agent modules, count only when signed by a key the policy',
    'allows (parent hosts that delegate here sign their cancels: list their keys in "controllers");',
    'anything else is rejected and audited. With --signing-key FILE the agent modules sign their',
    'approval requests and audit entries, and this host signs the cancels of children it started.',
    'A factory gets both as { trust, signer, evidence } to wire its own agents.',
  ].join('\n'),
  args: [['<module>', 'path to the agents module (.ts or .js)']],
  options: {
    scripted: { type: 'boolean', description: 'agent modules play their `script` (offline); factories get { scripted: true }' },
    'host-id': { type: 'string', valueName: '<id>', description: "this host's id on the bus", default: '<hostname>-<pid>' },
    'max-depth': { type: 'string', valueName: '<n>', description: 'deepest delegation this host runs', default: '4' },
    'max-children': { type: 'string', valueName: '<n>', description: 'children of one parent running at once', default: '8' },
    'max-total-turns': { type: 'string', valueName: '<n>', description: 'turns a run tree may use on this host' },
    'max-total-tokens': { type: 'string', valueName: '<n>', description: 'tokens a run tree may use on this host' },
    'max-total-runs': {
      type: 'string',
      valueName: '<n>',
      description: 'runs of one run tree this host may run (delegations, hand-offs, fan-out tasks)',
    },
    'no-directory': { type: 'boolean', description: 'do not announce the agents in the directory' },
    store: { type: 'string', valueName: '<dir>', description: 'file run store: resume stored runs, take over orphaned ones' },
    'run-bucket': {
      type: 'string',
      valueName: '<name>',
      description: 'NATS KV run store (instead of --store), shared by every host',
    },
    replicas: {
      type: 'string',
      valueName: '<1|3|5>',
      description: "copies of the deployment's stream, the run bucket and the directory bucket on a JetStream cluster",
      default: '1',
      choices: ['1', '3', '5'],
    },
    lease: { type: 'string', valueName: '<ms>', description: 'lease a host takes on a run it takes over', default: '30000' },
    ...TRUST_OPTIONS,
    ...OTLP_OPTIONS,
  },
  bus: 'required',
  minArgs: 1,
  maxArgs: 1,
  examples: [
    ['signalbox host examples/travel/hotel-host.ts --scripted', 'the travel example’s hotel agent, offline'],
    ['signalbox host ./agents.ts --host-id gpu-box-1 --nats nats://10.0.0.5:4222', 'a second host of the same agents'],
    [
      'signalbox host ./agents.ts --trust trust.json --signing-key host.nk --nats nats://10.0.0.5:4222',
      'only the keys in trust.json may approve, steer and cancel',
    ],
  ],
  async run(context) {
    const { c } = context
    const spec = context.positionals[0] as string
    const limits = {
      maxDepth: positiveInt(context, 'max-depth', 4),
      maxConcurrentChildren: positiveInt(context, 'max-children', 8),
      ...optionalInt(context, 'max-total-turns', 'maxTotalTurns'),
      ...optionalInt(context, 'max-total-tokens', 'maxTotalTokens'),
      ...optionalInt(context, 'max-total-runs', 'maxTotalRuns'),
    }
    const scripted = context.values.scripted === true
    // Read (and refused when bad) before anything is loaded or connected.
    const { trust, signer, trustFile } = await agentTrustFrom(context)
    const { importUserModule } = await import('../load-module.ts')
    const { exports } = await importUserModule(spec, context.io.cwd, [
      import('@signalbox/actors'),
      import('@signalbox/actors/nats'),
      import('@signalbox/actors/system'),
      import('@signalbox/actors/trust'),
      import('@signalbox/core/bus'),
      import('@signalbox/core/store'),
      import('@signalbox/core/testing'),
    ])
    const exported = (exports.agents ?? exports.default) as HostExport | undefined
    if (exported === undefined) {
      throw new CliError(
        'MODULE_INVALID',
        `${spec} exports no agents: use \`export default [agent, ...]\`, \`export const agents = ...\` or \`export default (host) => [...]\``,
      )
    }
    const [{ createAgentSystem, KvDirectory }, { hostname }, { createEvidenceBook }] = await Promise.all([
      import('@signalbox/actors/system'),
      import('node:os'),
      import('@signalbox/actors/trust'),
    ])
    const evidence = createEvidenceBook()
    const tracing = await commandTracing(context, 'signalbox-host')
    const replicas = replicasOf(context)
    const opened = await openBus(context, 'host', { waitForStream: true, ...(replicas > 1 ? { replicas } : {}) })
    const { subjects, url } = opened
    const bus = tracing ? tracing.bus(opened.bus) : opened.bus
    const hostId = (context.values['host-id'] as string | undefined) ?? `${hostname()}-${process.pid}`
    const directory =
      context.values['no-directory'] === true
        ? undefined
        : new KvDirectory(bus.connection, { bucket: directoryBucket(subjects.prefix), replicas })
    const store = await openRunStore(context, bus, replicas)
    const leaseMs = positiveInt(context, 'lease', 30_000)
    const system = createAgentSystem({
      bus,
      subjects,
      hostId,
      limits,
      ...(directory ? { directory } : {}),
      ...(trust ? { trust, evidence } : {}),
      ...(signer ? { signer } : {}),
      ...(store ? { runs: { store, leaseMs, onEvent: (event) => logTakeover(event) } } : {}),
    })
    const log = (record: Record<string, unknown>, text: string) =>
      context.out(context.global.json ? JSON.stringify(record) : text)
    const cleanups: (() => unknown)[] = [() => bus.close()]
    function logTakeover(event: import('@signalbox/actors/system').TakeoverEvent): void {
      const text =
        event.type === 'claimed'
          ? `${c.green('↻ resume')} ${c.magenta(event.agentId)} ${c.dim(shortId(event.runId))}${event.from ? c.dim(` · taken over from ${event.from}`) : ''}`
          : event.type === 'error'
            ? `${c.red('takeover error')} ${event.runId ?? ''} ${String(event.error)}`
            : `${c.dim(`takeover ${event.type}`)} ${event.runId}`
      log({ ...event, at: Date.now(), ...(event.type === 'error' ? { error: String(event.error) } : {}) }, text)
    }
    const stop = untilSignal(context.io.signal)
    try {
      const onClose = (cleanup: () => unknown) => {
        cleanups.push(cleanup)
      }
      const candidates =
        typeof exported === 'function'
          ? await exported({ bus, subjects, system, scripted, hostId, onClose, store, trust, signer, evidence })
          : exported
      const list = Array.isArray(candidates) ? candidates : [candidates]
      if (list.length === 0) throw new CliError('MODULE_INVALID', `${spec}: the agents list is empty`)
      for (const [index, candidate] of list.entries()) {
        const agent = await toAgent(candidate, `${spec} agents[${index}]`, {
          bus,
          subjects,
          scripted,
          cleanups,
          trust,
          signer,
          evidence,
          ...(store ? { stored: { store, hostId, leaseMs } } : {}),
        })
        system.add(agent)
        tracing?.agent(agent)
        // One line per run this host starts and ends (runs started here by parents elsewhere, or locally).
        agent.on('run.start', (event) => {
          const path = event.agentPath?.length ? ` ${c.dim(`(${[...event.agentPath, agent.id].join(' › ')})`)}` : ''
          log(
            {
              type: 'run.start',
              at: event.at,
              agentId: event.agentId,
              runId: event.runId,
              parentRunId: event.parentRunId,
              runPath: event.runPath,
              agentPath: event.agentPath,
            },
            `${c.dim(clockTime(event.at))} ${c.green('→ run')}   ${c.magenta(event.agentId)} ${c.dim(shortId(event.runId))}${event.parentRunId ? c.dim(` · parent ${shortId(event.parentRunId)}`) : ''}${path}`,
          )
        })
        agent.on('run.end', (event) => {
          const color = statusColor(event.status, c)
          const why = event.error ? ` ${event.error.code}: ${event.error.message}` : ''
          log(
            {
              type: 'run.end',
              at: event.at,
              agentId: event.agentId,
              runId: event.runId,
              status: event.status,
              turns: event.turns,
              ...(event.handoff ? { handoff: event.handoff } : {}),
              ...(event.error ? { error: event.error } : {}),
            },
            `${c.dim(clockTime(event.at))} ${color(`← ${event.status}`.padEnd(12))}${c.magenta(event.agentId)} ${c.dim(`${shortId(event.runId)} · ${event.turns} turn${event.turns === 1 ? '' : 's'}`)}${event.handoff ? ` · ${handedOff(event.handoff, c)}` : ''}${why}`,
          )
        })
      }
      await system.serve()
      const served = list.length
      const names = [...new Set(list.map((candidate) => (candidate as { id: string }).id))]
      const described = names
        .map((id) => {
          const tools = system.get(id)?.toolNames ?? []
          return `${c.bold(id)}${c.dim(` (${tools.length > 0 ? tools.join(', ') : 'no tools'})`)}`
        })
        .join(', ')
      const trusted = trust || signer ? `; trust: ${trustLine(trust, trustFile, signer)}` : ''
      const ready = `hosting ${served} agent${served === 1 ? '' : 's'}: ${described} on ${subjects.prefix}.agents.<id>.run at ${url} as ${hostId}${directory ? '' : ' (no directory)'}${trusted} (Ctrl-C to stop)`
      if (context.global.json) context.err(ready)
      else context.out(ready)
      const signal = await stop.promise
      const running = system.hostedRuns
      context.err(
        `${signal}: stopping${running > 0 ? ` (${running} run${running === 1 ? '' : 's'} in flight are cancelled)` : ''}`,
      )
    } finally {
      stop.dispose()
      await system.close()
      for (const cleanup of cleanups.reverse()) {
        try {
          await cleanup()
        } catch {
          // best effort
        }
      }
      await tracing?.shutdown()
    }
    context.err('agent host stopped')
    return EXIT.ok
  },
}

/** The run store named by `--store <dir>` or `--run-bucket <name>`, if any. */
async function openRunStore(
  context: CommandContext,
  bus: import('@signalbox/actors/nats').NatsBus,
  replicas: 1 | 3 | 5,
): Promise<import('@signalbox/core/store').RunStore | undefined> {
  const dir = context.values.store as string | undefined
  const bucket = context.values['run-bucket'] as string | undefined
  if (dir !== undefined && bucket !== undefined) throw new UsageError('pass one of --store or --run-bucket, not both')
  if (dir !== undefined) {
    const [{ FileRunStore }, path] = await Promise.all([import('@signalbox/core/store'), import('node:path')])
    return new FileRunStore({ directory: path.resolve(context.io.cwd, dir) })
  }
  if (bucket !== undefined) {
    const { KvRunStore } = await import('@signalbox/actors/store')
    return new KvRunStore({ connection: bus.connection, bucket, replicas })
  }
  return undefined
}

/** `--replicas`: 1, 3 or 5 (the parser already refused anything else). */
function replicasOf(context: CommandContext): 1 | 3 | 5 {
  const replicas = Number(context.values.replicas ?? 1) as 1 | 3 | 5
  if (replicas > 1 && context.values.store !== undefined) {
    throw new UsageError('--replicas is for a NATS run store (--run-bucket), not a file store (--store)', context.command)
  }
  return replicas
}

/** The KV bucket of a deployment's directory (one per prefix; its permissions are granted from the same name). */
export { directoryBucket }

function isAgent(value: unknown): value is Agent {
  const v = value as Partial<Agent> | null
  return (
    v !== null && typeof v === 'object' && typeof v.id === 'string' && typeof v.start === 'function' && typeof v.on === 'function'
  )
}

/** An agent as exported, or built from an agent module (provider, reviewer, answerer and audit on the bus). */
async function toAgent(
  candidate: unknown,
  where: string,
  options: {
    bus: import('@signalbox/actors/nats').NatsBus
    subjects: Subjects
    scripted: boolean
    cleanups: (() => unknown)[]
    trust: import('@signalbox/actors/trust').TrustPolicy | undefined
    signer: import('@signalbox/actors/trust').Signer | undefined
    evidence: import('@signalbox/actors/trust').EvidenceBook
    /** The host's run store: an agent module keeps its runs there, under the host's id and lease. */
    stored?: { store: import('@signalbox/core/store').RunStore; hostId: string; leaseMs: number }
  },
): Promise<Agent> {
  if (isAgent(candidate)) return candidate
  const { agentModuleProblems } = await import('../agent-module.ts')
  const problems = agentModuleProblems(candidate)
  if (problems.length > 0) {
    throw new CliError(
      'MODULE_INVALID',
      `${where} is neither an agent (createAgent) nor an agent module:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    )
  }
  const def = candidate as AgentModule
  const [{ busAuditLog, remoteAnswerer, remoteReviewer, discoverTools }, { signedAuditLog }, core, testing] = await Promise.all([
    import('@signalbox/actors'),
    import('@signalbox/actors/trust'),
    import('@signalbox/core'),
    import('@signalbox/core/testing'),
  ])
  const { bus, subjects } = options
  let provider: import('@signalbox/core').Provider
  if (options.scripted) {
    if (!def.script)
      throw new CliError('NO_SCRIPT', `${where} ("${def.id}") has no scripted conversation: add \`script\`, or drop --scripted`)
    const model = def.model ?? Object.keys(def.script).find((k) => k !== '*') ?? 'scripted'
    const script = def.script[model] ?? def.script['*']
    if (!script) throw new CliError('NO_SCRIPT', `${where} ("${def.id}") has no script for model "${model}"`)
    provider = new testing.ScriptedProvider({ script, model })
  } else {
    try {
      provider = new core.OpenAIProvider()
    } catch (error) {
      if (error instanceof core.ConfigError)
        throw new CliError('NO_MODEL', `no model for "${def.id}": set SIGNALBOX_MODEL (and OPENAI_BASE_URL), or pass --scripted`)
      throw error
    }
  }
  const { trust, signer, evidence } = options
  // As `signalbox run`: with a signing key the audit is signed and carries the signed decisions.
  const audit = signer
    ? signedAuditLog({ log: busAuditLog({ bus, subjects }), signer, evidence })
    : busAuditLog({ bus, subjects })
  const signed = { ...(trust ? { trust } : {}), ...(signer ? { signer } : {}), evidence }
  const reviewer = remoteReviewer({ bus, subjects, audit, ...signed })
  const answerer = remoteAnswerer({ bus, subjects, ...signed })
  options.cleanups.push(
    () => reviewer.close(),
    () => answerer.close(),
  )
  const local = typeof def.tools === 'function' ? await def.tools({ mode: 'nats', bus, subjects, answerer }) : (def.tools ?? [])
  const remote =
    def.remoteTools && def.remoteTools.length > 0
      ? await discoverTools({ bus, subjects, names: def.remoteTools, timeoutMs: 5_000 })
      : []
  const tools = [...local, ...remote]
  if (def.askHuman) tools.push(core.askHumanTool({ answerer, ...(def.askHuman === true ? {} : def.askHuman) }))
  return core.createAgent({
    id: def.id,
    provider,
    tools,
    instructions: def.instructions,
    reviewer,
    audit,
    ...(def.hooks ? { hooks: def.hooks } : {}),
    ...(def.maxTurns ? { maxTurns: def.maxTurns } : {}),
    ...(def.approvalTimeoutMs ? { approvalTimeoutMs: def.approvalTimeoutMs } : {}),
    ...(options.stored ?? {}),
  })
}

function positiveInt(context: CommandContext, flag: string, fallback: number): number {
  const raw = context.values[flag]
  if (raw === undefined) return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 0)
    throw new UsageError(`--${flag} must be a whole number (got "${String(raw)}")`, context.command)
  return value
}

function optionalInt<K extends string>(context: CommandContext, flag: string, key: K): Partial<Record<K, number>> {
  if (context.values[flag] === undefined) return {}
  const value = positiveInt(context, flag, 0)
  if (value < 1) throw new UsageError(`--${flag} must be at least 1`, context.command)
  return { [key]: value } as Partial<Record<K, number>>
}
