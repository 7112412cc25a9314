/// <reference lib="dom" />
/** The inbox: every pending approval and question, newest first, with its live deadline. */
import type { InboxItem, SettledItem } from '../view-model.ts'
import { actions } from './api.ts'
import { type ArgumentCheck, argumentChecker, parseOnly } from './argument-check.ts'
import { byId, clockTime, el, pretty } from './dom.ts'

export interface InboxView {
  render(items: InboxItem[], settled: SettledItem[]): void
  /** Updates the countdowns; `now` is the server's clock. */
  tick(now: number): void
}

export function createInboxView(): InboxView {
  const list = byId('inbox')
  const settledList = byId('settled')
  const count = byId('inbox-count')
  /** Cards by item id: re-rendering keeps what a person is typing. */
  const cards = new Map<string, { card: HTMLElement; countdown: HTMLElement; deadline: number }>()

  const runLine = (item: InboxItem) => {
    const agents = [...item.agentPath, item.agentId].join(' › ')
    return `${agents} · run ${item.runId}${item.runPath.length > 0 ? ` (in ${item.runPath.join(' › ')})` : ''}`
  }

  const guard = (card: HTMLElement, action: () => Promise<void>) => {
    const error = card.querySelector<HTMLElement>('.error')
    for (const button of card.querySelectorAll('button')) button.disabled = true
    action().then(
      () => {
        card.classList.add('sent')
      },
      (failure: unknown) => {
        if (error) error.textContent = failure instanceof Error ? failure.message : String(failure)
        for (const button of card.querySelectorAll('button')) button.disabled = false
      },
    )
  }

  const steerControls = (card: HTMLElement, item: InboxItem) => {
    const steerText = el('input', {
      type: 'text',
      class: 'steer-text',
      placeholder: 'steer this run: a correction the agent reads',
    })
    const steer = el('button', { class: 'steer', type: 'button' }, 'Steer')
    const cancel = el('button', { class: 'cancel', type: 'button' }, 'Cancel run')
    steer.addEventListener('click', () => {
      const text = steerText.value.trim()
      if (text)
        guard(card, () =>
          actions.steer(item.runId, text).then(() => {
            steerText.value = ''
          }),
        )
    })
    cancel.addEventListener('click', () => guard(card, () => actions.cancel(item.runId)))
    return el('div', { class: 'actions' }, steerText, steer, cancel)
  }

  const approvalCard = (item: Extract<InboxItem, { kind: 'approval' }>) => {
    const countdown = el('dd', { class: 'countdown' })
    const reason = el('input', { type: 'text', class: 'reason', placeholder: 'reason for a denial (the model reads it)' })
    const approve = el('button', { class: 'approve', type: 'button' }, 'Approve')
    const deny = el('button', { class: 'deny', type: 'button' }, 'Deny')
    const card = el(
      'article',
      { class: 'item approval', 'data-id': item.id, 'data-tool': item.toolName },
      el('h4', {}, `Approve ${item.toolName}?`),
      el(
        'p',
        { class: item.origin.verified ? 'origin verified' : 'origin unverified' },
        item.origin.verified
          ? `verified: signed by ${item.origin.name} (${item.origin.signer})`
          : `NOT verified: ${item.origin.reason}`,
      ),
      el(
        'dl',
        {},
        el('dt', {}, 'tool'),
        el('dd', { class: 'tool' }, item.toolName),
        el('dt', {}, 'arguments'),
        el('dd', {}, el('pre', { class: 'arguments' }, pretty(item.arguments))),
        el('dt', {}, 'call'),
        el('dd', { class: 'call-id' }, item.callId),
        el('dt', {}, 'digest'),
        el('dd', { class: 'digest' }, item.digest),
        el('dt', {}, 'run'),
        el('dd', { class: 'run' }, runLine(item)),
        el('dt', {}, 'requested'),
        el('dd', {}, clockTime(item.requestedAt)),
        el('dt', {}, 'time left'),
        countdown,
      ),
      el('div', { class: 'actions' }, approve, reason, deny),
      el('p', { class: 'error' }),
    )
    card.insertBefore(steerControls(card, item), card.querySelector('.error'))
    approve.addEventListener('click', () => guard(card, () => actions.decide(item.id, true)))
    card.insertBefore(editControls(card, item), card.querySelector('.error'))
    deny.addEventListener('click', () => guard(card, () => actions.decide(item.id, false, reason.value.trim() || undefined)))
    return { card, countdown }
  }

  /**
   * Approve with edited arguments: checked here against the tool's JSON Schema as the person types
   * (the button waits for a valid edit), and checked again by the agent, which alone decides.
   */
  const editControls = (card: HTMLElement, item: Extract<InboxItem, { kind: 'approval' }>) => {
    const editor = el('textarea', { class: 'edited-arguments', rows: '4', spellcheck: 'false' })
    editor.value = pretty(item.arguments)
    const send = el('button', { class: 'approve-edited', type: 'button' }, 'Approve with these arguments')
    const issues = el('ul', { class: 'edit-issues', role: 'alert' })
    const checker = argumentChecker(item.parameters)
    const note = el(
      'p',
      { class: 'edit-note' },
      checker
        ? "Checked here against the tool's schema, and again by the agent."
        : 'No schema came with this request: the agent will check the edit.',
    )
    let checked: ArgumentCheck = { ok: true, value: item.arguments }
    const check = () => {
      checked = checker ? checker(editor.value) : parseOnly(editor.value)
      issues.replaceChildren(...(checked.ok ? [] : checked.issues.map((issue) => el('li', {}, issue))))
      send.disabled = !checked.ok
      editor.setAttribute('aria-invalid', String(!checked.ok))
    }
    editor.addEventListener('input', check)
    send.addEventListener('click', () => {
      check()
      if (checked.ok) {
        const { value } = checked
        guard(card, () => actions.approveEdited(item.id, value))
      }
    })
    return el('details', { class: 'edit' }, el('summary', {}, 'Edit the arguments, then approve'), editor, issues, note, send)
  }

  const questionCard = (item: Extract<InboxItem, { kind: 'question' }>) => {
    const countdown = el('dd', { class: 'countdown' })
    const answerText = el('input', { type: 'text', class: 'answer-text', placeholder: 'your answer' })
    const answer = el('button', { class: 'answer', type: 'button' }, 'Answer')
    const card = el(
      'article',
      { class: 'item question', 'data-id': item.id },
      el('h4', { class: 'question-text' }, item.question),
      el(
        'dl',
        {},
        el('dt', {}, 'run'),
        el('dd', { class: 'run' }, runLine(item)),
        el('dt', {}, 'call'),
        el('dd', { class: 'call-id' }, item.callId),
        el('dt', {}, 'asked'),
        el('dd', {}, clockTime(item.requestedAt)),
        el('dt', {}, 'time left'),
        countdown,
      ),
      el('div', { class: 'actions' }, answerText, answer),
      el('p', { class: 'error' }),
    )
    card.insertBefore(steerControls(card, item), card.querySelector('.error'))
    answer.addEventListener('click', () => {
      const text = answerText.value.trim()
      if (text) guard(card, () => actions.answer(item.id, text))
    })
    return { card, countdown }
  }

  return {
    render(items, settled) {
      const ordered = [...items].sort((a, b) => b.requestedAt - a.requestedAt)
      for (const [id, entry] of cards) {
        if (!ordered.some((item) => item.id === id)) {
          entry.card.remove()
          cards.delete(id)
        }
      }
      for (const item of ordered) {
        if (cards.has(item.id)) continue
        const built = item.kind === 'approval' ? approvalCard(item) : questionCard(item)
        cards.set(item.id, { ...built, deadline: item.deadline })
      }
      list.replaceChildren(...ordered.map((item) => cards.get(item.id)?.card).filter((c): c is HTMLElement => c !== undefined))
      if (ordered.length === 0) list.replaceChildren(el('p', { class: 'empty' }, 'Nothing waits for you.'))
      count.textContent = String(ordered.length)
      settledList.replaceChildren(...settled.map(settledLine))
    },
    tick(now) {
      for (const { countdown, deadline } of cards.values()) {
        const left = Math.max(0, deadline - now)
        countdown.textContent =
          left === 0 ? 'expired' : `${(left / 1000).toFixed(left < 10_000 ? 1 : 0)} s (until ${clockTime(deadline)})`
        countdown.classList.toggle('urgent', left < 10_000)
      }
    },
  }
}

function settledLine(item: SettledItem): HTMLElement {
  const what = item.kind === 'approval' ? item.title : `question "${item.title}"`
  const how =
    item.outcome === 'timed out'
      ? 'timed out: nobody decided by the deadline'
      : `${item.outcome}${item.by ? ` by ${item.by}` : ''}${item.reason ? `: ${item.reason}` : ''}`
  return el(
    'li',
    { 'data-id': item.id, class: `outcome-${item.outcome.replace(' ', '-')}` },
    `${clockTime(item.at)} · ${what} (${item.agentId}, run ${item.runId}) `,
    el('b', { class: 'outcome' }, how),
  )
}
