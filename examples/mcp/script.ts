/** The scripted conversation of the MCP demo, as data: the model explores a folder and writes a summary. */
import path from 'node:path'
import type { ScriptStep } from '@signalbox/core/testing'

export const FILES_MODEL = 'files'

export const TIMETABLE = [
  '07:02 Bern → Basel, platform 4',
  '07:32 Bern → Zürich, platform 7',
  '08:02 Bern → Basel, platform 4',
].join('\n')

export const filesPrompt = (dir: string) =>
  `The folder ${dir} holds a timetable. Write a short summary of the Basel trains next to it.`

export function filesScript(dir: string): ScriptStep[] {
  const summary = '# Basel trains\n\n- 07:02, platform 4\n- 08:02, platform 4\n'
  return [
    { toolCalls: [{ name: 'list_directory', arguments: { path: dir } }] },
    { toolCalls: [{ name: 'read_text_file', arguments: { path: path.join(dir, 'timetable.txt') } }] },
    // Refused by the reviewer (only Markdown files may be written): the model tries again.
    { toolCalls: [{ name: 'write_file', arguments: { path: path.join(dir, 'summary.sh'), content: summary } }] },
    { toolCalls: [{ name: 'write_file', arguments: { path: path.join(dir, 'summary.md'), content: summary } }] },
    { content: 'Wrote summary.md: two Basel trains, 07:02 and 08:02, both from platform 4.' },
  ]
}
