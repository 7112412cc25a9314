/**
 * `docs/loop.md`'s diagram, generated from the agent machine itself (`statechartToMermaid`, what
 * `signalbox graph` prints): `pnpm docs:loop` writes it; loop-doc.test.ts fails when the file and
 * the machine differ.
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { statechartToMermaid } from '@signalbox/actors/inspect'
import { createAgent, type Provider } from '@signalbox/core'

export const LOOP_DOC = fileURLToPath(new URL('../../docs/loop.md', import.meta.url))

/** The line before the diagram's fence: where the generated block starts. */
export const MARKER = '<!-- generated from the machine by `pnpm docs:loop`: do not edit by hand -->'

/** The diagram as a Markdown fence: every state with its tags, every transition with its event and guard. */
export function loopDiagram(): string {
  const provider: Provider = {
    model: 'none',
    complete: async () => {
      throw new Error('the diagram never calls the model')
    },
  }
  const machine = createAgent({ id: 'agent', provider }).machine
  return `\`\`\`mermaid\n${statechartToMermaid(machine, { descriptions: false })}\`\`\`\n`
}

/** The generated block as it stands in `text` (from the marker to the end of its fence). */
export function diagramIn(text: string): string | undefined {
  const start = text.indexOf(`${MARKER}\n`)
  if (start < 0) return undefined
  const from = start + MARKER.length + 1
  const end = text.indexOf('\n```\n', from)
  return end < 0 ? undefined : text.slice(from, end + 5)
}

/** `text` with its generated block replaced by `diagram`. */
export function withDiagram(text: string, diagram: string): string {
  const current = diagramIn(text)
  if (current === undefined) throw new Error(`${LOOP_DOC} has no generated block (the marker line ${MARKER})`)
  const at = text.indexOf(`${MARKER}\n`) + MARKER.length + 1
  return text.slice(0, at) + diagram + text.slice(at + current.length)
}

if (process.argv.includes('--write')) {
  const text = readFileSync(LOOP_DOC, 'utf8')
  const next = withDiagram(text, loopDiagram())
  if (next !== text) writeFileSync(LOOP_DOC, next)
  console.log(next === text ? `${LOOP_DOC} is up to date` : `${LOOP_DOC}: diagram regenerated`)
}
