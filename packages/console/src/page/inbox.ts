/// <reference lib="dom" />
/** The inbox: every pending approval and question, newest first, with its live deadline. */
import type { InboxItem, MessageView, SettledItem } from '../view-model.ts'
import { actions } from './api.ts'
import { clockTime, el } from './dom.ts'
import { editControls } from './edit-controls.ts'
import { whyBlock } from './why.ts'

export interface InboxView {
  /** `transcripts`: each run's conversation, with contents allowed (else empty). */
  render(items: InboxItem[], settled: SettledItem[], transcripts: ReadonlyMap<string, MessageView[]>): void
  /** Updates the countdowns; `now` is the server's clock. */
  tick(now: number): void
}

type Approval = Extract<InboxItem, { kind: 'approval' }>
type Question = Extract<InboxItem, { kind: 'question' }>

interface Card {
  card: HTMLElement
  countdown: HTMLElement
  deadline: number
  runId: string
  /** Shows the run's conversation (approvals, with contents allowed). */
  conversation?: (messages: MessageView[] | undefined) => void
}

export function createInboxView(): InboxView {
  const list = document.getElementById('inbox') as HTMLElement
  const settledList = document.getElementById('settled') as HTMLElement
  const count = document.getElementById('inbox-count') as HTMLElement
  const notice = document.getElementById('trust-notice') as HTMLElement
  /** Cards by item id: re-rendering keeps what a person is typing. */
  const cards = new Map<string, Card>()

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

  /** Steer or cancel the run: its own row at the card's foot, apart from the decision. */
  const runControls = (card: HTMLElement, item: InboxItem) => {
    const steerText = el('input', {
      type: 'text',
      class: 'steer-text',
      placeholder: 'steer this run: a correction the agent reads',
    })
    const steer = el('button', { class: 'steer', type: 'button' }, 'Steer')
    const cancel = el('button', { class: 'cancel', type: 'button', title: 'Cancel the whole run' }, 'Cancel run')
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
    return el('div', { class: 'run-controls' }, el('span', { class: 'label' }, 'This run:'), steerText, steer, cancel)
  }

  const meta = (item: InboxItem, rows: [string, string, string?][]) =>
    el(
      'dl',
      { class: 'meta' },
      ...rows.flatMap(([label, value, className]) => [
        el('dt', {}, label),
        el('dd', className ? { class: className } : {}, value),
      ]),
      el('dt', {}, 'run'),
      el('dd', { class: 'run' }, runLine(item)),
    )

  const approvalCard = (item: Approval): Card => {
    const countdown = el('span', { class: 'countdown' })
    const reason = el('input', { type: 'text', class: 'reason', placeholder: 'reason for a denial (the model reads it)' })
    const approve = el('button', { class: 'approve', type: 'button' }, 'Approve')
    const deny = el('button', { class: 'deny', type: 'button' }, 'Deny')
    const why = whyBlock(item)
    const card = el(
      'article',
      { class: 'item approval', 'data-id': item.id, 'data-tool': item.toolName, 'data-verified': String(item.origin.verified) },
      el(
        'div',
        { class: 'item-head' },
        el('h4', {}, 'Approve ', el('code', { class: 'tool' }, item.toolName), '?'),
        el('span', { class: 'asker', title: 'the agent that asks' }, [...item.agentPath, item.agentId].join(' › ')),
        countdown,
      ),
      item.origin.verified
        ? el('p', { class: 'origin verified' }, `✔ verified: signed by ${item.origin.name} (${item.origin.signer})`)
        : null,
      item.description ? el('p', { class: 'tool-description' }, item.description) : null,
      why.element,
      el('div', { class: 'actions decide' }, approve, reason, deny),
      el('p', { class: 'error' }),
    )
    card.append(
      editControls(item, (edited) => guard(card, () => actions.approveEdited(item.id, edited))),
      meta(item, [
        ['call', item.callId, 'call-id'],
        ['digest', item.digest, 'digest'],
        ['requested', clockTime(item.requestedAt)],
      ]),
      runControls(card, item),
    )
    approve.addEventListener('click', () => guard(card, () => actions.decide(item.id, true)))
    deny.addEventListener('click', () => guard(card, () => actions.decide(item.id, false, reason.value.trim() || undefined)))
    return { card, countdown, deadline: item.deadline, runId: item.runId, conversation: why.conversation }
  }

  const questionCard = (item: Question): Card => {
    const countdown = el('span', { class: 'countdown' })
    const answerText = el('input', { type: 'text', class: 'answer-text', placeholder: 'your answer' })
    const answer = el('button', { class: 'answer', type: 'button' }, 'Answer')
    const card = el(
      'article',
      { class: 'item question', 'data-id': item.id },
      el('div', { class: 'item-head' }, el('h4', { class: 'question-text' }, item.question), countdown),
      meta(item, [
        ['call', item.callId, 'call-id'],
        ['asked', clockTime(item.requestedAt)],
      ]),
      el('div', { class: 'actions' }, answerText, answer),
      el('p', { class: 'error' }),
    )
    card.append(runControls(card, item))
    answer.addEventListener('click', () => {
      const text = answerText.value.trim()
      if (text) guard(card, () => actions.answer(item.id, text))
    })
    return { card, countdown, deadline: item.deadline, runId: item.runId }
  }

  return {
    render(items, settled, transcripts) {
      const ordered = [...items].sort((a, b) => b.requestedAt - a.requestedAt)
      for (const [id, entry] of cards) {
        if (!ordered.some((item) => item.id === id)) {
          entry.card.remove()
          cards.delete(id)
        }
      }
      for (const item of ordered) {
        if (cards.has(item.id)) continue
        cards.set(item.id, item.kind === 'approval' ? approvalCard(item) : questionCard(item))
      }
      for (const entry of cards.values()) entry.conversation?.(transcripts.get(entry.runId))
      if (ordered.length === 0) list.replaceChildren(el('p', { class: 'empty' }, 'Nothing waits for you.'))
      else
        place(
          list,
          ordered.map((item) => cards.get(item.id)?.card).filter((c): c is HTMLElement => c !== undefined),
        )
      count.textContent = String(ordered.length)
      // Said once for the page, not on every card: every unsigned request has the same reason.
      const unverified = ordered.find((item): item is Approval => item.kind === 'approval' && !item.origin.verified)
      notice.hidden = unverified === undefined
      notice.textContent =
        unverified && !unverified.origin.verified
          ? `Requests here are not verified (${unverified.origin.reason}): anyone who may publish on the bus could have sent one. Start the console with --agent-key or --trust to show only requests your agents signed.`
          : ''
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

/**
 * Puts `cards` in `list` in that order, moving only those out of place: a node taken out of the
 * page loses focus, so re-placing every card on each update (a new request, a transcript) took the
 * caret from whoever was typing a reason or an edit, and their next keys went nowhere.
 */
function place(list: HTMLElement, cards: HTMLElement[]): void {
  const focused = document.activeElement
  const field = focused instanceof HTMLInputElement || focused instanceof HTMLTextAreaElement ? focused : undefined
  const caret = field ? { start: field.selectionStart, end: field.selectionEnd } : undefined
  for (const [index, card] of cards.entries()) {
    const at = list.children[index]
    if (at !== card) list.insertBefore(card, at ?? null)
  }
  while (list.children.length > cards.length) list.lastElementChild?.remove()
  // A card that had to move (requests reordered) keeps the caret where it was.
  if (focused instanceof HTMLElement && focused !== document.activeElement && list.contains(focused)) {
    focused.focus()
    if (field && caret) field.setSelectionRange(caret.start, caret.end)
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
