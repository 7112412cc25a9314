/// <reference lib="dom" />
/** The audit trail, newest first, filtered by agent, run, tool, actor and kind. */
import type { AuditEntry } from '@signalbox/core'
import { byId, clockTime, el, pretty } from './dom.ts'

/** How each kind of entry ended, for its colour: done as asked, refused by a person, nobody decided, not applied. */
const OUTCOMES: Record<string, 'ok' | 'no' | 'none' | 'refused' | 'info'> = {
  'approval.granted': 'ok',
  'question.answered': 'ok',
  'approval.denied': 'no',
  'tool.refused': 'no',
  'approval.timeout': 'none',
  'approval.unavailable': 'none',
  'approval.orphaned': 'none',
  'question.timeout': 'none',
  'tool.outcome_unknown': 'none',
  'approval.rejected': 'refused',
  'approval.duplicate': 'refused',
  'question.rejected': 'refused',
  'steering.applied': 'info',
}

function outcomeOf(kind: string): (typeof OUTCOMES)[string] {
  return Object.hasOwn(OUTCOMES, kind) ? (OUTCOMES[kind] as (typeof OUTCOMES)[string]) : 'info'
}

export interface AuditView {
  render(entries: AuditEntry[]): void
}

/** `kinds`: every audit kind (core's list), for the filter. */
export function createAuditView(kinds: readonly string[]): AuditView {
  const form = byId<HTMLFormElement>('audit-filters')
  const body = byId('audit').querySelector('tbody') as HTMLElement
  const kind = form.querySelector('select') as HTMLSelectElement
  for (const k of kinds) kind.append(el('option', { value: k }, k))
  let latest: AuditEntry[] = []

  const render = () => {
    const filter = Object.fromEntries(new FormData(form).entries()) as Record<string, string>
    const has = (value: string | undefined, wanted: string | undefined) => !wanted || (value ?? '').includes(wanted.trim())
    const rows = latest
      .filter(
        (entry) =>
          has(entry.agentId, filter.agentId) &&
          (has(entry.runId, filter.runId) || entry.runPath.some((id) => has(id, filter.runId))) &&
          has(entry.toolName, filter.toolName) &&
          has(entry.actor, filter.actor) &&
          (!filter.kind || entry.kind === filter.kind),
      )
      .sort((a, b) => b.decidedAt - a.decidedAt)
      .slice(0, 500)
    body.replaceChildren(
      ...rows.map((entry) =>
        el(
          'tr',
          { 'data-kind': String(entry.kind), class: `outcome-${outcomeOf(entry.kind)}` },
          el('td', { class: 'when' }, clockTime(entry.decidedAt)),
          el('td', { class: 'kind' }, String(entry.kind)),
          el('td', {}, entry.agentId),
          el('td', { class: 'run' }, entry.runId),
          el('td', { class: 'tool' }, entry.toolName ?? ''),
          actorCell(entry),
          el('td', { class: 'decision' }, decisionText(entry)),
          el('td', { class: 'reason' }, entry.reason ?? ''),
          el('td', { class: 'latency' }, entry.latencyMs === undefined ? '' : `${entry.latencyMs} ms`),
          el('td', {}, entry.shown === undefined ? '' : el('pre', {}, pretty(entry.shown))),
          el('td', { class: 'edited' }, entry.edited === undefined ? '' : el('pre', {}, pretty(entry.edited))),
        ),
      ),
    )
  }
  form.addEventListener('input', render)
  form.addEventListener('submit', (event) => event.preventDefault())
  return {
    render(entries) {
      latest = entries
      render()
    },
  }
}

/**
 * Who decided: for a signed message, the name its key has in the policy (who provably sent it);
 * the name the message gave itself, when another, beside it as claimed.
 */
function actorCell(entry: AuditEntry): HTMLElement {
  const { claimed } = entry
  return el(
    'td',
    { class: 'actor' },
    el('span', { class: 'verified-actor' }, entry.actor),
    ...(typeof claimed === 'string' && claimed !== entry.actor
      ? [' ', el('span', { class: 'claimed', title: 'the name the message gave itself' }, `(claimed ${claimed})`)]
      : []),
  )
}

/** A refused message's decision is what it asked for, not what happened: say so. */
function decisionText(entry: AuditEntry): string {
  const decision = entry.decision ?? ''
  if (outcomeOf(entry.kind) !== 'refused') return decision
  return decision ? `refused (it said: ${decision})` : 'refused'
}
