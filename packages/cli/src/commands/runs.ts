/**
 * `signalbox runs`: the runs a store keeps (a directory with `--store`, a NATS KV bucket with
 * `--bucket`), with their state, their owner's lease and what each waits for. Reads only.
 */
import type { RunParking, RunStore, StoredRun, StoredRunStatus } from '@signalbox/core/store'
import { openBus } from '../bus.ts'
import { type Command, type CommandContext, EXIT, UsageError } from '../cli.ts'
import { clockTime } from '../output.ts'
import { buildRunTrees, renderRunTrees, treeJson } from '../run-tree.ts'

export const STATUSES = ['running', 'waiting', 'done', 'failed', 'cancelled', 'parked'] as const

/** One stored run as `--json` prints it (and the text view shows it). */
export interface RunRow {
  type: 'run'
  runId: string
  agentId: string
  runPath: string[]
  status: StoredRunStatus
  revision: number
  owner: string | undefined
  /** Whether the owner's lease has run out (another host may take the run over). */
  leaseExpired: boolean | undefined
  leaseExpiresAt: number | undefined
  waitingFor: Waiting[]
  /** Why a parked run cannot be continued, who found it and when. */
  parked?: RunParking
  savedAt: number
}

export type Waiting =
  | { kind: 'approval'; requestId: string; toolName: string; callId: string; deadline: number }
  | { kind: 'question'; questionId: string; question: string; deadline: number }

export const runs: Command = {
  name: 'runs',
  summary: 'list the runs a store keeps: state, owner, lease and what each waits for',
  usage: 'runs (--store <dir> | --bucket <name> --nats <url>) [--tree] [--status <s,...>] [--agent <id>] [flags]',
  description: [
    'Reads a run store without changing it and prints one line per stored run: its id, agent,',
    'status (running, waiting, done, failed, cancelled), the host that owns it and until when its',
    'lease holds ("expired": another host may take the run over), and what it waits for (the tool',
    'call awaiting approval, the question, and their deadlines); a parked run (its stored state cannot',
    'be continued, so no host claims it) shows why. --store reads the file store in a',
    'directory; --bucket reads the NATS KV store (needs --nats). A run whose checkpoint cannot be',
    'read is reported with its error, and the other runs are still listed; the exit code is then 1.',
    '--tree draws the runs as the trees delegation made of them (parent, then its children under',
    'it), each with its host, state and what it waits for: a person, or a child still running; a run',
    'whose parent is not in the listing heads its own tree and names its parent.',
  ].join('\n'),
  options: {
    store: { type: 'string', valueName: '<dir>', description: 'the file store: a directory of runs' },
    bucket: { type: 'string', valueName: '<name>', description: 'the NATS KV store: its bucket (with --nats)' },
    status: {
      type: 'string',
      valueName: '<s,...>',
      description: `only runs in these states (${STATUSES.join(', ')})`,
    },
    agent: { type: 'string', valueName: '<id>', description: 'only the runs of this agent' },
    tree: { type: 'boolean', description: 'show runs as trees: parent › child, host, state, what each waits for' },
  },
  bus: 'optional',
  maxArgs: 0,
  examples: [
    ['signalbox runs --store ./runs', 'every run in the file store'],
    ['signalbox runs --bucket signalbox_runs --nats nats://localhost:4222 --status waiting', 'runs parked on a person'],
    ['signalbox runs --store ./runs --json', 'one JSON object per run'],
    ['signalbox runs --bucket signalbox_runs --nats nats://localhost:4222 --tree', 'run trees across hosts'],
  ],
  async run(context) {
    const dir = context.values.store as string | undefined
    const bucket = context.values.bucket as string | undefined
    if ((dir === undefined) === (bucket === undefined)) {
      throw new UsageError('pass exactly one of --store <dir> (file store) or --bucket <name> (NATS KV store)', runs)
    }
    const status = parseStatuses(context.values.status)
    const agentId = context.values.agent as string | undefined
    const { store, close } = await openStore(context, dir, bucket)
    try {
      const signal = context.io.signal ?? AbortSignal.timeout(30_000)
      const listing = await store.list({
        ...(status ? { status } : {}),
        ...(agentId !== undefined ? { agentId } : {}),
        signal,
      })
      const now = Date.now()
      const rows = listing.runs.map((run) => toRow(run, now)).sort((a, b) => a.savedAt - b.savedAt)
      if (context.values.tree === true) {
        const trees = buildRunTrees(rows)
        if (context.global.json) for (const tree of trees) context.out(JSON.stringify(treeJson(tree)))
        else if (rows.length === 0) context.out('No stored runs.')
        else {
          const details = (row: RunRow) => detailLines(context, row, now)
          for (const line of renderRunTrees(trees, context.c, { details, clockTime })) context.out(line)
        }
        for (const error of listing.errors) {
          if (context.global.json)
            context.out(JSON.stringify({ type: 'error', runId: error.runId, code: error.code, message: error.message }))
          else context.err(`${context.c.red('unreadable')} [${error.code}] ${error.message}`)
        }
      } else if (context.global.json) {
        for (const row of rows) context.out(JSON.stringify(row))
        for (const error of listing.errors)
          context.out(JSON.stringify({ type: 'error', runId: error.runId, code: error.code, message: error.message }))
      } else {
        printRows(context, rows, now)
        for (const error of listing.errors) context.err(`${context.c.red('unreadable')} [${error.code}] ${error.message}`)
      }
      return listing.errors.length > 0 ? EXIT.failed : EXIT.ok
    } finally {
      await close()
    }
  },
}

function parseStatuses(value: unknown): StoredRunStatus[] | undefined {
  if (value === undefined) return undefined
  const list = String(value)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  for (const s of list) {
    if (!(STATUSES as readonly string[]).includes(s))
      throw new UsageError(`unknown status "${s}": use ${STATUSES.join(', ')}`, runs)
  }
  return list as StoredRunStatus[]
}

export async function openStore(
  context: CommandContext,
  dir: string | undefined,
  bucket: string | undefined,
): Promise<{ store: RunStore; close(): Promise<void> }> {
  if (dir !== undefined) {
    const [{ FileRunStore }, path, fs] = await Promise.all([
      import('@signalbox/core/store'),
      import('node:path'),
      import('node:fs/promises'),
    ])
    const directory = path.resolve(context.io.cwd, dir)
    // The store would create a missing directory; a listing must not, and a typo deserves a clear word.
    const stat = await fs.stat(directory).catch(() => undefined)
    if (!stat?.isDirectory()) throw new UsageError(`--store ${dir}: no such directory`, context.command)
    return { store: new FileRunStore({ directory }), close: async () => {} }
  }
  const { bus } = await openBus(context, 'runs')
  const { KvRunStore } = await import('@signalbox/actors/store')
  // Opening a KV store creates a missing bucket; a listing must not, and a typo deserves a clear word.
  const exists = await bus
    .manager()
    .then((jsm) => jsm.streams.info(`KV_${bucket}`))
    .then(
      () => true,
      () => false,
    )
  if (!exists) {
    await bus.close()
    throw new UsageError(`--bucket ${bucket}: no such KV bucket on this server`, context.command)
  }
  return { store: new KvRunStore({ connection: bus.connection, bucket: bucket as string }), close: () => bus.close() }
}

export function toRow(run: StoredRun, now: number): RunRow {
  const { checkpoint, revision } = run
  const { lease } = checkpoint
  const waitingFor: Waiting[] = [
    ...checkpoint.pending.approvals.map(
      (a): Waiting => ({
        kind: 'approval',
        requestId: a.requestId,
        toolName: a.toolName,
        callId: a.callId,
        deadline: a.deadline,
      }),
    ),
    ...checkpoint.pending.questions.map(
      (q): Waiting => ({ kind: 'question', questionId: q.questionId, question: q.question, deadline: q.deadline }),
    ),
  ]
  return {
    type: 'run',
    runId: checkpoint.runId,
    agentId: checkpoint.agentId,
    runPath: checkpoint.runPath,
    status: checkpoint.status,
    revision,
    owner: lease?.owner,
    leaseExpired: lease === undefined ? undefined : lease.expiresAt <= now,
    leaseExpiresAt: lease?.expiresAt,
    waitingFor,
    ...(checkpoint.parked ? { parked: checkpoint.parked } : {}),
    savedAt: checkpoint.savedAt,
  }
}

function printRows(context: CommandContext, rows: RunRow[], now: number): void {
  const { c } = context
  if (rows.length === 0) {
    context.out('No stored runs.')
    return
  }
  const idWidth = Math.max('RUN'.length, ...rows.map((r) => r.runId.length))
  const agentWidth = Math.max('AGENT'.length, ...rows.map((r) => r.agentId.length))
  context.out(c.bold(`${'RUN'.padEnd(idWidth)}  ${'AGENT'.padEnd(agentWidth)}  ${'STATUS'.padEnd(9)}  OWNER (LEASE)`))
  for (const row of rows) {
    const owner =
      row.owner === undefined
        ? c.dim('no owner')
        : row.leaseExpired
          ? `${row.owner} ${c.red('(lease expired)')}`
          : `${row.owner} ${c.dim(`(lease until ${clockTime(row.leaseExpiresAt as number)})`)}`
    // Padded before it is coloured: the colour codes would count in the width.
    const color = row.status === 'waiting' ? c.yellow : row.status === 'failed' || row.status === 'parked' ? c.red : c.cyan
    const status = color(row.status.padEnd(9))
    context.out(`${row.runId.padEnd(idWidth)}  ${c.magenta(row.agentId.padEnd(agentWidth))}  ${status}  ${owner}`)
    for (const line of detailLines(context, row, now)) context.out(`    ${line}`)
  }
}

/** Why a run is parked and what it waits for, one line each (unindented). */
function detailLines(context: CommandContext, row: RunRow, now: number): string[] {
  const { c } = context
  const lines: string[] = []
  if (row.parked)
    lines.push(`parked by ${row.parked.by} at ${clockTime(row.parked.at)}: [${row.parked.code}] ${row.parked.message}`)
  for (const w of row.waitingFor) {
    const due = w.deadline <= now ? c.red('deadline passed') : `deadline ${clockTime(w.deadline)}`
    lines.push(
      w.kind === 'approval'
        ? `waits for approval of ${c.bold(w.toolName)} (${w.callId}, ${w.requestId}), ${due}`
        : `waits for an answer to "${w.question}" (${w.questionId}), ${due}`,
    )
  }
  return lines
}
