/// <reference lib="dom" />
/**
 * Approve with edited arguments: checked here against the tool's JSON Schema as the person types
 * (the button waits for a valid edit), and checked again by the agent, which alone decides.
 */
import type { InboxItem } from '../view-model.ts'
import { type ArgumentCheck, argumentChecker, parseOnly } from './argument-check.ts'
import { el, pretty } from './dom.ts'

export function editControls(item: Extract<InboxItem, { kind: 'approval' }>, send: (edited: unknown) => void): HTMLElement {
  const editor = el('textarea', { class: 'edited-arguments', rows: '4', spellcheck: 'false' })
  editor.value = pretty(item.arguments)
  const button = el('button', { class: 'approve-edited', type: 'button' }, 'Approve with these arguments')
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
    button.disabled = !checked.ok
    editor.setAttribute('aria-invalid', String(!checked.ok))
  }
  editor.addEventListener('input', check)
  button.addEventListener('click', () => {
    check()
    if (checked.ok) send(checked.value)
  })
  return el('details', { class: 'edit' }, el('summary', {}, 'Edit the arguments, then approve'), editor, issues, note, button)
}
