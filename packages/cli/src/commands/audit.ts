import type { AuditFilter } from '@signalbox/actors'
import type { SignedBy, TrustPolicy } from '@signalbox/actors/trust'
import type { AuditEntry, AuditKind } from '@signalbox/core'
import { openBus, untilSignal } from '../bus.ts'
import { type Command, type CommandContext, EXIT, UsageError } from '../cli.ts'
import { type Colors, dateTime, formatElapsed, shortId } from '../output.ts'
import { reviewerTrustFrom } from '../trust-flags.ts'

export const AUDIT_KINDS = [
  'approval.granted',
  'approval.denied',
  'approval.timeout',
  'approval.rejected',
  'steering.applied',
  'question.answered',
  'question.timeout',
  'question.rejected',
] as const satisfies readonly AuditKind[]

interface Column {
  title: string
  value(entry: AuditEntry): string
  /** Cut longer values to this many characters. */
  max: number
  color?: (c: Colors, entry: AuditEntry) => (s: string) => string
}

const COLUMNS: Column[] = [
  { title: 'TIME', value: (e) => dateTime(e.decidedAt), max: 19 },
  { title: 'AGENT', value: (e) => e.agentId, max: 20, color: (c) => c.magenta },
  { title: 'RUN', value: (e) => shortId(e.runId), max: 16 },
  { title: 'TOOL', value: (e) => e.toolName ?? '-', max: 24 },
  { title: 'KIND', value: (e) => e.kind, max: 17, color: kindColor },
  { title: 'ACTOR', value: (e) => e.actor, max: 16 },
  { title: 'DECISION', value: (e) => e.decision ?? '-', max: 30, color: kindColor },
  { title: 'REASON', value: (e) => e.reason ?? '', max: 48 },
  { title: 'LATENCY', value: (e) => (e.latencyMs === undefined ? '-' : formatElapsed(e.latencyMs)), max: 10 },
]

function kindColor(c: Colors, entry: AuditEntry): (s: string) => string {
  if (entry.kind === 'approval.granted' || entry.kind === 'question.answered') return c.green
  if (entry.kind === 'steering.applied') return c.yellow
  return c.red
}

const cut = (text: string, max: number) => {
  const flat = text.replace(/\s+/g, ' ')
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat
}

/**
 * The keys `--verify` is pinned to: the writers (`--agent-key`, and the `agents` of a `--trust`
 * policy) and the policy that names and checks the deciders. Without a writer key nothing would
 * tell an agent's entry from one signed by any fresh key: refused.
 */
async function verifyKeys(context: CommandContext): Promise<{ writers: Record<string, string>; policy: TrustPolicy }> {
  const { trust, trustFile } = await reviewerTrustFrom(context, undefined)
  const writers: Record<string, string> = {}
  for (const keys of Object.values(trust?.options.agents ?? {})) {
    for (const key of keys) writers[key] = trust?.nameOf(key) ?? key
  }
  if (trust === undefined || Object.keys(writers).length === 0) {
    throw new UsageError(
      `--verify needs the agents' public keys, which sign the entries: --agent-key UA... (repeatable), or a --trust policy with an "agents" section${trustFile ? ` (${trustFile} has none)` : ''}`,
      context.command,
    )
  }
  return { writers, policy: trust }
}

const keyText = (signed: SignedBy) => `${signed.key}${signed.name !== undefined ? ` (${signed.name})` : ' (not in the policy)'}`

/** `--verify`: one line per entry, who signed it and what it records, and why it does not verify (or, with --json, one report per entry). */
async function verifyEntries(
  context: CommandContext,
  entries: AuditEntry[],
  keys: { writers: Record<string, string>; policy: TrustPolicy },
): Promise<number> {
  const { verifyAuditTrail } = await import('@signalbox/actors/trust')
  const { c } = context
  const report = verifyAuditTrail(entries, keys)
  if (context.global.json) {
    for (const { index, ok, writer, evidence, problems, entry } of report.entries) {
      context.out(JSON.stringify({ index, ok, writer, evidence, problems, entry }))
    }
  } else {
    for (const { index, ok, entry, writer, evidence, problems } of report.entries) {
      const what = `#${index + 1} ${dateTime(entry.decidedAt)} ${entry.agentId} ${entry.kind} ${entry.toolName ?? ''} by ${entry.actor}${entry.claimed !== undefined ? ` (claimed ${entry.claimed})` : ''}`
      const by = writer === undefined ? 'entry not validly signed' : `entry signed by ${keyText(writer)}`
      const records =
        entry.evidence === undefined
          ? ''
          : evidence === undefined
            ? '; records a message with no valid signature'
            : `; records a message signed by ${keyText(evidence)}`
      const signed = `${by}${records}`
      const line = `${ok ? c.green('ok') : c.red('FAIL')} ${what.replace(/\s+/g, ' ')}: ${signed}`
      context.out(ok ? line : `${line}\n   ${c.red(problems.map((p) => `${p.code} (${p.reason})`).join('; '))}`)
    }
    const summary = `${report.checked} entr${report.checked === 1 ? 'y' : 'ies'} checked, ${report.failures.length} do not verify`
    context.out(report.failures.length === 0 ? c.green(summary) : c.bold(summary))
  }
  return report.failures.length === 0 ? EXIT.ok : EXIT.failed
}

export const audit: Command = {
  name: 'audit',
  summary: 'list the audit trail: approvals, denials, timeouts, steering, answers',
  usage: 'audit [--agent <id>] [--run <runId>] [--tool <name>] [--kind <kind>] [--follow | --verify] [flags]',
  description: [
    'Reads the audit stream (JetStream) oldest first and prints one row per decision: time, agent,',
    'run, tool, kind, who decided (actor), the decision, the reason the model read, and the latency.',
    'Filters combine. With --follow, keeps printing new entries until Ctrl-C. With --json, one',
    'audit entry (as stored, including what the reviewer was shown) per line.',
    'With --verify, checks every entry offline against known keys (--agent-key: the agents that',
    'write the trail; --trust: the policy that names the keys and says who may decide what): each',
    'entry is signed by an agent key, and each decision, answer or correction it records is signed',
    'by a key the policy allows and says what the entry says. One line per entry names the keys;',
    "an entry signed by any other key fails (exit 1). A refused decision's evidence is recorded as",
    'it came and is not required to verify (docs/protocol.md §17.5).',
  ].join('\n'),
  options: {
    agent: { type: 'string', valueName: '<id>', description: 'only this agent', default: 'every agent' },
    run: { type: 'string', valueName: '<runId>', description: 'only this run (and its child runs)', default: 'every run' },
    tool: { type: 'string', valueName: '<name>', description: 'only calls of this tool', default: 'every tool' },
    kind: { type: 'string', valueName: '<kind>', description: 'only this kind', choices: AUDIT_KINDS, default: 'every kind' },
    follow: { type: 'boolean', short: 'f', description: 'keep printing new entries until Ctrl-C' },
    verify: {
      type: 'boolean',
      description: 'check every entry offline against the keys given: who signed it, what it records (exit 1 if one fails)',
    },
    trust: {
      type: 'string',
      valueName: '<file>',
      description:
        "with --verify: the agents' trust policy (names the keys, says who may decide what; its agents sign the entries)",
      default: '$SIGNALBOX_TRUST',
    },
    'agent-key': {
      type: 'string',
      valueName: '<UA...>',
      description: 'with --verify: an agent public nkey that writes entries (added to the policy’s agents)',
      multiple: true,
    },
  },
  bus: 'required',
  maxArgs: 0,
  examples: [
    ['signalbox audit --agent claw', "every decision about the claw agent's calls"],
    ['signalbox audit --kind approval.denied --tool drop_claw --json', 'denied drops, as JSON lines'],
    ['signalbox audit --follow', 'tail the audit trail'],
    [
      'signalbox audit --verify --trust policy.json --agent-key UA...',
      'check every stored entry: signed by the agent, decided by a key the policy allows',
    ],
  ],
  async run(context) {
    const { c } = context
    const filter: AuditFilter = {}
    if (typeof context.values.agent === 'string') filter.agentId = context.values.agent
    if (typeof context.values.run === 'string') filter.runId = context.values.run
    if (typeof context.values.tool === 'string') filter.toolName = context.values.tool
    if (typeof context.values.kind === 'string') filter.kind = context.values.kind as AuditKind
    // Read (and refused when missing) before connecting.
    const keys = context.values.verify ? await verifyKeys(context) : undefined
    const { bus, subjects } = await openBus(context, 'audit')
    const { readAudit } = await import('@signalbox/actors')
    const cells = (entry: AuditEntry, widths: number[]) =>
      COLUMNS.map((column, i) => {
        const text = cut(column.value(entry), column.max).padEnd(widths[i] as number)
        return column.color ? column.color(c, entry)(text) : text
      })
        .join('  ')
        .trimEnd()
    const header = (widths: number[]) =>
      c.bold(
        COLUMNS.map((column, i) => column.title.padEnd(widths[i] as number))
          .join('  ')
          .trimEnd(),
      )

    try {
      if (context.values.follow) {
        const widths = COLUMNS.map((column) => Math.max(column.title.length, column.max))
        const stop = untilSignal(context.io.signal)
        const controller = new AbortController()
        void stop.promise.then(() => controller.abort())
        if (!context.global.json) context.out(header(widths))
        else context.err(`following the audit trail on ${subjects.prefix} (Ctrl-C to stop)`)
        await readAudit({
          bus,
          subjects,
          filter,
          follow: true,
          signal: controller.signal,
          onEntry: (entry) => context.out(context.global.json ? JSON.stringify(entry) : cells(entry, widths)),
        })
        stop.dispose()
        return EXIT.ok
      }
      const entries = await readAudit({ bus, subjects, filter })
      if (keys) return await verifyEntries(context, entries, keys)
      if (context.global.json) {
        for (const entry of entries) context.out(JSON.stringify(entry))
        return EXIT.ok
      }
      if (entries.length === 0) {
        context.out(c.dim(`no audit entries${Object.keys(filter).length > 0 ? ' match' : ''} on ${subjects.prefix}`))
        return EXIT.ok
      }
      const widths = COLUMNS.map((column) =>
        Math.max(column.title.length, ...entries.map((e) => cut(column.value(e), column.max).length)),
      )
      context.out(header(widths))
      for (const entry of entries) context.out(cells(entry, widths))
      context.out(c.dim(`${entries.length} entr${entries.length === 1 ? 'y' : 'ies'}`))
      return EXIT.ok
    } finally {
      await bus.close()
    }
  },
}
