/// <reference lib="dom" />
/**
 * The console page: one SSE stream from the server keeps the inbox, the runs and the audit live.
 * A message the page cannot use is skipped; it never stops the page.
 */
import type { AuditEntry } from '@signalbox/core'
import * as zod from 'zod/v4'
import type { InboxItem, MessageView, RunView, ServerMessage, SettledItem } from '../view-model.ts'
import { type AuditView, createAuditView } from './audit.ts'
import { byId } from './dom.ts'
import { createInboxView, type InboxView } from './inbox.ts'
import { createRunsView, type RunsView } from './runs.ts'

// zod's JIT object parser compiles code with `new Function`, which the page's CSP forbids: use the plain one.
zod.config({ jitless: true })

const inbox = new Map<string, InboxItem>()
let settled: SettledItem[] = []
const runs = new Map<string, RunView>()
let audit: AuditEntry[] = []
const transcripts = new Map<string, MessageView[]>()
let clockOffset = 0
let views: { inbox: InboxView; runs: RunsView; audit: AuditView } | undefined
const connection = byId('connection')

function apply(message: ServerMessage): void {
  switch (message.type) {
    case 'hello': {
      clockOffset = message.now - Date.now()
      byId('reviewer').textContent = message.reviewer
      document.body.dataset.contents = String(message.includeContents)
      inbox.clear()
      for (const item of message.inbox) inbox.set(item.id, item)
      settled = message.settled
      runs.clear()
      for (const run of message.runs) runs.set(run.runId, run)
      audit = message.audit
      transcripts.clear()
      for (const [runId, messages] of Object.entries(message.transcripts ?? {})) transcripts.set(runId, messages)
      views ??= {
        inbox: createInboxView(),
        runs: createRunsView(message.chart, { pendingTool }),
        audit: createAuditView(message.auditKinds),
      }
      renderInbox()
      views.runs.render(runs)
      views.audit.render(audit)
      return
    }
    case 'inbox.add':
      inbox.set(message.item.id, message.item)
      renderInbox()
      views?.runs.render(runs)
      return
    case 'inbox.settled':
      inbox.delete(message.settled.id)
      settled = [message.settled, ...settled.filter((s) => s.id !== message.settled.id)].slice(0, 100)
      renderInbox()
      views?.runs.render(runs)
      return
    case 'run':
      runs.set(message.run.runId, message.run)
      views?.runs.render(runs)
      return
    case 'audit':
      audit = [...audit, message.entry].slice(-2_000)
      views?.audit.render(audit)
      return
    case 'transcript':
      transcripts.set(message.runId, message.messages)
      renderInbox()
      return
  }
}

/** The tool of the run's call waiting for approval here, if one is. */
function pendingTool(runId: string): string | undefined {
  for (const item of inbox.values()) if (item.kind === 'approval' && item.runId === runId) return item.toolName
  return undefined
}

/** A new card shows its countdown at once, not at the next tick. */
function renderInbox(): void {
  views?.inbox.render([...inbox.values()], settled, transcripts)
  views?.inbox.tick(Date.now() + clockOffset)
}

const stream = new EventSource('/events')
stream.addEventListener('open', () => {
  connection.textContent = 'live'
  connection.className = 'online'
})
stream.addEventListener('error', () => {
  connection.textContent = 'reconnecting…'
  connection.className = 'offline'
})
stream.addEventListener('message', (event) => {
  try {
    apply(JSON.parse(event.data) as ServerMessage)
  } catch (error) {
    console.warn('signalbox console: skipped a message it could not show', error)
  }
})

setInterval(() => views?.inbox.tick(Date.now() + clockOffset), 250)

function showTab(): void {
  const tab = (location.hash.slice(1) || 'inbox') as 'inbox' | 'runs' | 'audit'
  for (const name of ['inbox', 'runs', 'audit']) {
    byId(`tab-${name}`).hidden = name !== tab
    document.querySelector(`nav a[data-tab="${name}"]`)?.classList.toggle('active', name === tab)
  }
}
window.addEventListener('hashchange', showTab)
showTab()
