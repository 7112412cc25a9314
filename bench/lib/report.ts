/** Turning measurements into rows, tables and the JSON file. */
import { cpuNsPerStep, type Measured, median, nsPerStep, spreadPercent, stepsPerSecond } from './measure.ts'

export type Metric = 'us-per-step' | 'steps-per-second' | 'kib-per-run'

export interface Row {
  id: string
  label: string
  /** Median over rounds, in the table's metric. */
  median: number
  /** Interquartile range over rounds, % of the median. */
  spread: number
  /** Per round, in the table's metric. */
  values: number[]
  /** Tool steps timed per round. */
  steps: number
  /** Ratio of medians to the table's baseline (time: >1 is slower; throughput: <1 is slower). */
  vsBaseline: number
  /** Ratio to this row's like-for-like comparator, if it has one. */
  vsComparator?: { id: string; ratio: number }
  /** In µs per step: this row minus the baseline (in-process tables). */
  overheadUs?: number
  /**
   * CPU time of the bench process per tool step (median µs), and its ratio to the comparator (or
   * the baseline). Other work on the machine inflates wall time much more than CPU time.
   */
  cpu?: { usPerStep: number; values: number[]; ratio: number; vs: string }
}

export interface Check {
  name: string
  value: number
  unit: string
  target: string
  pass: boolean
  /** The same figure from CPU time instead of wall time (for information: less sensitive to a busy machine). */
  cpuValue?: number
  /**
   * The same figure for the design's floor (signalbox's chart in XState, without signalbox) in the
   * same run: what signalbox's own code adds is the figure minus this one.
   */
  floorValue?: number
}

export interface Table {
  id: string
  title: string
  note: string
  metric: Metric
  baseline: string
  rows: Row[]
  checks: Check[]
  /** Wall time the table took, warm-up included. */
  seconds?: number
  /** Anything else worth keeping in the JSON file. */
  extra?: Record<string, unknown>
}

export interface Comparator {
  /** Variant id → the id it is compared with like-for-like. */
  [id: string]: string
}

export function buildRows(measured: Measured[], metric: Metric, baseline: string, comparators: Comparator = {}): Row[] {
  const valuesOf = (m: Measured) => (metric === 'steps-per-second' ? stepsPerSecond(m) : nsPerStep(m).map((ns) => ns / 1000))
  const medians = new Map(measured.map((m) => [m.variant.id, median(valuesOf(m))]))
  const base = medians.get(baseline)
  if (base === undefined) throw new Error(`no baseline ${baseline}`)
  return measured
    .map((m) => {
      const values = valuesOf(m)
      const med = medians.get(m.variant.id)!
      const row: Row = {
        id: m.variant.id,
        label: m.variant.label,
        median: med,
        spread: spreadPercent(values),
        values,
        steps: m.samples[0]?.steps ?? 0,
        vsBaseline: med / base,
      }
      const other = comparators[m.variant.id]
      if (other !== undefined && medians.has(other)) row.vsComparator = { id: other, ratio: med / medians.get(other)! }
      if (metric === 'us-per-step') row.overheadUs = med - base
      return row
    })
    .map((row, i, rows) => {
      const cpuValues = cpuNsPerStep(measured[i]!).map((ns) => ns / 1000)
      if (cpuValues.some((v) => !Number.isFinite(v))) return row
      const vs = row.vsComparator?.id ?? baseline
      const vsIndex = rows.findIndex((r) => r.id === vs)
      const vsMedian = median(cpuNsPerStep(measured[vsIndex]!).map((ns) => ns / 1000))
      const usPerStep = median(cpuValues)
      row.cpu = { usPerStep, values: cpuValues, ratio: usPerStep / vsMedian, vs }
      return row
    })
}

export const rowById = (rows: Row[], id: string): Row => {
  const row = rows.find((r) => r.id === id)
  if (!row) throw new Error(`no row ${id}`)
  return row
}

const fmt = (value: number, digits: number) =>
  Number.isFinite(value) ? value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits }) : '-'

function metricCell(metric: Metric, value: number): string {
  if (metric === 'steps-per-second') return fmt(value, 0)
  if (metric === 'kib-per-run') return fmt(value, 1)
  return fmt(value, value < 100 ? 2 : 1)
}

const metricHeader: Record<Metric, string> = {
  'us-per-step': 'µs / tool step',
  'steps-per-second': 'tool steps / s',
  'kib-per-run': 'KiB / parked run',
}

/** Rows as plain text columns (for the terminal) or as a Markdown table. */
export function renderTable(table: Table, style: 'text' | 'markdown'): string {
  const hasComparator = table.rows.some((r) => r.vsComparator)
  const hasOverhead = table.metric === 'us-per-step'
  const baseLabel = rowById(table.rows, table.baseline).label
  const hasCpu = table.rows.some((r) => r.cpu)
  const header = [
    'variant',
    metricHeader[table.metric],
    'spread',
    `× ${style === 'markdown' ? baseLabel : shortLabel(baseLabel)}`,
    ...(hasComparator ? ['× like-for-like'] : []),
    ...(hasOverhead ? ['+µs / step'] : []),
    ...(hasCpu ? ['CPU µs / step', `CPU ×${hasComparator ? ' like-for-like' : ''}`] : []),
  ]
  const body = table.rows.map((row) => [
    row.label,
    metricCell(table.metric, row.median),
    table.metric === 'kib-per-run' ? '' : `±${fmt(row.spread / 2, 0)}%`,
    `${fmt(row.vsBaseline, 2)}x`,
    ...(hasComparator ? [row.vsComparator ? `${fmt(row.vsComparator.ratio, 2)}x` : ''] : []),
    ...(hasOverhead ? [row.id === table.baseline ? '' : fmt(row.overheadUs ?? 0, 1)] : []),
    ...(hasCpu
      ? [
          row.cpu ? fmt(row.cpu.usPerStep, row.cpu.usPerStep < 100 ? 2 : 1) : '',
          row.cpu && (row.vsComparator || !hasComparator) ? `${fmt(row.cpu.ratio, 2)}x` : '',
        ]
      : []),
  ])
  const numeric = header.map((_, i) => i > 0)
  if (style === 'markdown') {
    const line = (cells: string[]) => `| ${cells.join(' | ')} |`
    return [line(header), line(header.map((_, i) => (numeric[i] ? '---:' : '---'))), ...body.map(line)].join('\n')
  }
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => r[i]!.length)))
  const line = (cells: string[]) => cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join('  ')
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n')
}

/**
 * The targets with their verdicts. `judged: false` (a quick run: small sizes, few rounds) prints each
 * figure without one: a target is met or missed on a full run only.
 */
export function renderChecks(checks: Check[], style: 'text' | 'markdown', judged = true): string {
  return checks
    .map((c) => {
      const verdict = judged ? (c.pass ? 'PASS' : 'MISS') : 'n/a '
      const show = (v: number) => `${fmt(v, c.unit === 'x' ? 2 : 1)}${c.unit === 'x' ? 'x' : ` ${c.unit}`}`
      const cpu = c.cpuValue === undefined ? '' : `; from CPU time: ${show(c.cpuValue)}`
      const floor = c.floorValue === undefined ? '' : `; the design's floor: ${show(c.floorValue)}`
      const text = `${c.name}: ${show(c.value)} (target ${c.target}${cpu}${floor})`
      return style === 'markdown' ? `- **${verdict}** ${text}` : `  ${verdict}  ${text}`
    })
    .join('\n')
}

function shortLabel(label: string): string {
  return label.length > 24 ? `${label.slice(0, 23)}…` : label
}
