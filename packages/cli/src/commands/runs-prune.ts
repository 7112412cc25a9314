/**
 * `signalbox runs prune`: retention for a run store. Deletes the finished runs (and, when asked,
 * the parked ones) last saved longer ago than `--older-than`, checkpoint and transcript; never a
 * run that may still be going on.
 */
import type { StoredRunStatus } from '@signalbox/core/store'
import { type Command, type CommandContext, EXIT, UsageError } from '../cli.ts'
import { clockTime } from '../output.ts'
import { openStore, STATUSES } from './runs.ts'

const PRUNABLE: readonly StoredRunStatus[] = ['done', 'failed', 'cancelled', 'parked']
const DEFAULT_STATUSES: readonly StoredRunStatus[] = ['done', 'failed', 'cancelled']
const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }

export const runsPrune: Command = {
  name: 'runs prune',
  summary: 'delete finished runs older than a retention from a run store',
  usage:
    'runs prune (--store <dir> | --bucket <name> --nats <url>) --older-than <age> [--status <s,...>] [--agent <id>] [--dry-run] [flags]',
  description: [
    'Retention for a run store: deletes every run that is finished (done, failed, cancelled) and was',
    'last saved longer ago than --older-than, with its transcript (what a tool returned, what the',
    'person said). Parked runs (stored, but their state cannot be continued) go only when --status',
    'names them. A run that may still be going on (running, waiting) is never pruned, whatever its',
    'age. --dry-run lists what would go and deletes nothing. Prints one line per run pruned and a',
    'count; run it from cron (or call pruneRuns from @signalbox/core/store) to keep a retention.',
  ].join('\n'),
  options: {
    store: { type: 'string', valueName: '<dir>', description: 'the file store: a directory of runs' },
    bucket: { type: 'string', valueName: '<name>', description: 'the NATS KV store: its bucket (with --nats)' },
    'older-than': {
      type: 'string',
      valueName: '<age>',
      description: 'prune runs last saved longer ago than this: a number and a unit (ms, s, m, h, d, w), e.g. 30d',
    },
    status: {
      type: 'string',
      valueName: '<s,...>',
      description: `which runs may go (${PRUNABLE.join(', ')})`,
      default: DEFAULT_STATUSES.join(','),
    },
    agent: { type: 'string', valueName: '<id>', description: 'only the runs of this agent' },
    'dry-run': { type: 'boolean', description: 'list what would be pruned, delete nothing' },
  },
  bus: 'optional',
  maxArgs: 0,
  examples: [
    ['signalbox runs prune --store ./runs --older-than 30d', 'delete finished runs not saved for 30 days'],
    ['signalbox runs prune --store ./runs --older-than 7d --dry-run', 'what a 7-day retention would delete'],
    [
      'signalbox runs prune --bucket signalbox_runs --nats nats://localhost:4222 --older-than 12h --status done,parked',
      'done and parked runs older than 12 hours, in the KV store',
    ],
  ],
  async run(context) {
    const dir = context.values.store as string | undefined
    const bucket = context.values.bucket as string | undefined
    if ((dir === undefined) === (bucket === undefined)) {
      throw new UsageError('pass exactly one of --store <dir> (file store) or --bucket <name> (NATS KV store)', runsPrune)
    }
    const age = parseAge(context.values['older-than'])
    const status = parseStatuses(context.values.status)
    const agentId = context.values.agent as string | undefined
    const dryRun = context.values['dry-run'] === true
    const { pruneRuns } = await import('@signalbox/core/store')
    const { store, close } = await openStore(context, dir, bucket)
    try {
      const signal = context.io.signal ?? AbortSignal.timeout(120_000)
      const before = Date.now() - age
      const result = await pruneRuns(store, {
        before,
        status,
        ...(agentId !== undefined ? { agentId } : {}),
        dryRun,
        signal,
      })
      report(context, result, { dryRun, before })
      return result.errors.length > 0 ? EXIT.failed : EXIT.ok
    } finally {
      await close()
    }
  },
}

function report(
  context: CommandContext,
  result: Awaited<ReturnType<typeof import('@signalbox/core/store').pruneRuns>>,
  { dryRun, before }: { dryRun: boolean; before: number },
): void {
  const verb = dryRun ? 'would prune' : 'pruned'
  if (context.global.json) {
    for (const { checkpoint } of result.pruned) {
      const { runId, agentId, status, savedAt } = checkpoint
      context.out(JSON.stringify({ type: dryRun ? 'would-prune' : 'pruned', runId, agentId, status, savedAt }))
    }
    for (const error of result.errors)
      context.out(JSON.stringify({ type: 'error', runId: error.runId, code: error.code, message: error.message }))
    return
  }
  for (const { checkpoint } of result.pruned) {
    const saved = new Date(checkpoint.savedAt).toISOString().slice(0, 10)
    context.out(
      `${verb} ${checkpoint.runId}  ${checkpoint.agentId}  ${checkpoint.status}  saved ${saved} ${clockTime(checkpoint.savedAt)}`,
    )
  }
  for (const error of result.errors) context.err(`${context.c.red('kept')} [${error.code}] ${error.message}`)
  const cutoff = new Date(before).toISOString()
  const runs = `${result.pruned.length} run${result.pruned.length === 1 ? '' : 's'}`
  context.out(`${runs} ${dryRun ? 'would be pruned' : 'pruned'} (last saved before ${cutoff}).`)
}

/** `30d`, `12h`, `90m`, `45s`, `500ms`, `2w`: an age in ms. */
export function parseAge(value: unknown): number {
  if (value === undefined) throw new UsageError('--older-than <age> is required (e.g. 30d)', runsPrune)
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d|w)$/.exec(String(value).trim())
  if (!match)
    throw new UsageError(`--older-than ${String(value)}: use a number and a unit (ms, s, m, h, d, w), e.g. 30d`, runsPrune)
  return Number(match[1]) * (UNITS[match[2] as string] as number)
}

function parseStatuses(value: unknown): StoredRunStatus[] {
  const list = String(value ?? DEFAULT_STATUSES.join(','))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  for (const s of list) {
    if (!(STATUSES as readonly string[]).includes(s))
      throw new UsageError(`unknown status "${s}": use ${PRUNABLE.join(', ')}`, runsPrune)
    if (!PRUNABLE.includes(s as StoredRunStatus)) {
      throw new UsageError(
        `--status ${s}: a run that may still be going on is never pruned (use ${PRUNABLE.join(', ')})`,
        runsPrune,
      )
    }
  }
  return list as StoredRunStatus[]
}
