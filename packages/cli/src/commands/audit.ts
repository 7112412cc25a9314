import type { AuditFilter } from '@signalbox/actors'
import type { AuditEntry, AuditKind } from '@signalbox/core'
import { openBus, untilSignal } from '../bus.ts'
import { type Command, type CommandContext, EXIT } from '../cli.ts'
import { type Colors, dateTime, formatElapsed, shortId } from '../output.ts'

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

/** `--verify`: one line per entry that does not verify (or, with --json, one report line per entry). */
async function verifyEntries(context: CommandContext, entries: AuditEntry[]): Promise<number> {
  const { verifyAuditTrail } = await import('@signalbox/actors/trust')
  const { c } = context
  const report = verifyAuditTrail(entries)
  const failed = new Map(report.failures.map((f) => [f.index, f.problems]))
  if (context.global.json) {
    entries.forEach((entry, index) => {
      context.out(JSON.stringify({ index, ok: !failed.has(index), problems: failed.get(index) ?? [], entry }))
    })
  } else {
    for (const { index, entry, problems } of report.failures) {
      const what = `#${index + 1} ${dateTime(entry.decidedAt)} ${entry.agentId} ${entry.kind} ${entry.toolName ?? ''} by ${entry.actor}`
      context.out(c.red(`${what.replace(/\s+/g, ' ')}: ${problems.map((p) => `${p.code} (${p.reason})`).join('; ')}`))
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
  ].join('\n'),
  options: {
    agent: { type: 'string', valueName: '<id>', description: 'only this agent', default: 'every agent' },
    run: { type: 'string', valueName: '<runId>', description: 'only this run (and its child runs)', default: 'every run' },
    tool: { type: 'string', valueName: '<name>', description: 'only calls of this tool', default: 'every tool' },
    kind: { type: 'string', valueName: '<kind>', description: 'only this kind', choices: AUDIT_KINDS, default: 'every kind' },
    follow: { type: 'boolean', short: 'f', description: 'keep printing new entries until Ctrl-C' },
    verify: { type: 'boolean', description: 'check every signature offline; list entries that do not verify (exit 1 if any)' },
  },
  bus: 'required',
  maxArgs: 0,
  examples: [
    ['signalbox audit --agent claw', "every decision about the claw agent's calls"],
    ['signalbox audit --kind approval.denied --tool drop_claw --json', 'denied drops, as JSON lines'],
    ['signalbox audit --follow', 'tail the audit trail'],
    ['signalbox audit --verify', 'check the signatures of every stored entry'],
  ],
  async run(context) {
    const { c } = context
    const filter: AuditFilter = {}
    if (typeof context.values.agent === 'string') filter.agentId = context.values.agent
    if (typeof context.values.run === 'string') filter.runId = context.values.run
    if (typeof context.values.tool === 'string') filter.toolName = context.values.tool
    if (typeof context.values.kind === 'string') filter.kind = context.values.kind as AuditKind
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
      if (context.values.verify) return await verifyEntries(context, entries)
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
