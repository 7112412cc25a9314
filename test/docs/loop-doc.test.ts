/**
 * `docs/loop.md` shows the loop as the machine is: its diagram is generated from `agentMachine`
 * (`pnpm docs:loop`), and this test fails when the two differ.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { diagramIn, LOOP_DOC, loopDiagram, MARKER, withDiagram } from './loop-doc.ts'

describe('docs/loop.md', () => {
  it('shows the diagram generated from the agent machine (run `pnpm docs:loop` after changing the chart)', () => {
    const text = readFileSync(LOOP_DOC, 'utf8')
    const shown = diagramIn(text)
    expect(shown, `docs/loop.md needs the line ${MARKER} before its diagram`).toBeDefined()
    expect(shown, 'docs/loop.md is out of date: run `pnpm docs:loop`').toBe(loopDiagram())
  })

  it('is generated with every state and hook point of the machine', () => {
    const diagram = loopDiagram()
    for (const state of ['beforeTurn', 'beforeProviderCall', 'beforeToolExecution', 'afterToolExecution', 'afterTurn'])
      expect(diagram).toMatch(new RegExp(`^\\s*${state} : \\[hook point\\]$`, 'm'))
    expect(diagram).toContain('awaitingApproval : [wait, human]')
    // The exits of the waits, with their routes.
    expect(diagram).toContain('callingModel --> executingTool : work.done [modelAnswered(call-runs)]')
    expect(diagram).toContain('executingTool --> callingModel : work.done [toolAnswered(next-turn/model)]')
  })

  it('notices a diagram that differs from the machine', () => {
    const text = readFileSync(LOOP_DOC, 'utf8')
    const edited = withDiagram(text, loopDiagram().replace('idle --> running', 'idle --> done'))
    expect(diagramIn(edited)).not.toBe(loopDiagram())
    expect(withDiagram(edited, loopDiagram())).toBe(text.includes(MARKER) ? withDiagram(text, loopDiagram()) : edited)
  })
})
