/// <reference lib="dom" />
/**
 * Why a call is asked, on its card: what the run was asked, what the model said before the call,
 * the exact arguments, and (with contents allowed) the whole conversation so far.
 */
import type { InboxItem, MessageView } from '../view-model.ts'
import { el, pretty } from './dom.ts'

export interface WhyBlock {
  element: HTMLElement
  /** Shows the run's conversation; `undefined` (contents not allowed, or not seen yet) hides it. */
  conversation(messages: MessageView[] | undefined): void
}

export function whyBlock(item: Extract<InboxItem, { kind: 'approval' }>): WhyBlock {
  const { input, lastText } = item.context ?? {}
  const list = el('ol')
  const summary = el('summary')
  const details = el('details', { class: 'conversation', hidden: '' }, summary, list)
  let shown: MessageView[] | undefined
  const element = el(
    'div',
    { class: 'why' },
    ...(input ? [el('span', {}, 'The run was asked'), el('blockquote', { class: 'context-input' }, input)] : []),
    ...(lastText ? [el('span', {}, 'The model said'), el('blockquote', { class: 'context-last-text' }, lastText)] : []),
    el('span', {}, 'It asks to run'),
    el('pre', { class: 'arguments' }, pretty(item.arguments)),
    details,
  )
  return {
    element,
    conversation(messages) {
      if (messages === shown) return
      shown = messages
      details.hidden = messages === undefined || messages.length === 0
      summary.textContent = `The conversation so far (${messages?.length ?? 0} messages)`
      list.replaceChildren(
        ...(messages ?? []).map((message) =>
          el('li', { class: `message ${message.role}` }, el('span', { class: 'role' }, message.role), message.text),
        ),
      )
    },
  }
}
