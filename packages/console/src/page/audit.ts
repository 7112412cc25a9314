/// <reference lib="dom" />
/** The audit trail, newest first, filtered by agent, run, tool, actor and kind. */
import type { AuditEntry } from '@signalbox/core'
import { byId, clockTime, el, pretty } from './dom.ts'

const KINDS = [
  'approval.granted',
  'approval.denied',
  'approval.timeout',
  'approval.unavailable',
  'approval.rejected',
  'steering.applied',
  'question.answered',
  'question.timeout',
]

export interface AuditView {
  render(entries: AuditEntry[]): void
}

export function createAuditView(): AuditView {
  const form = byId<HTMLFormElement>('audit-filters')
  const body = byId('audit').querySelector('tbody') as HTMLElement
  const kind = form.querySelector('select') as HTMLSelectElement
  for (const k of KINDS) kind.append(el('option', { value: k }, k))
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
          { 'data-kind': String(entry.kind) },
          el('td', {}, clockTime(entry.decidedAt)),
          el('td', { class: 'kind' }, String(entry.kind)),
          el('td', {}, entry.agentId),
          el('td', {}, entry.runId),
          el('td', { class: 'tool' }, entry.toolName ?? ''),
          // Who provably decided (the policy's name for the key); the name the message claimed, beside it.
          el(
            'td',
            { class: 'actor' },
            entry.actor,
            ...(entry.claimed === undefined ? [] : [' ', el('span', { class: 'claimed' }, `(claimed ${entry.claimed})`)]),
          ),
          el('td', { class: 'decision' }, entry.decision ?? ''),
          el('td', { class: 'reason' }, entry.reason ?? ''),
          el('td', {}, entry.latencyMs === undefined ? '' : `${entry.latencyMs} ms`),
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
