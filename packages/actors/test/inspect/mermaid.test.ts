/** The statechart as Mermaid, generated from the machine definition (what `signalbox graph` prints). */

import { statechartToMermaid } from '@signalbox/actors/inspect'
import { createAgent, HOOK_POINTS, type Provider } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { createMachine } from 'xstate'

const provider: Provider = { model: 'none', complete: async () => Promise.reject(new Error('never called')) }
const machine = createAgent({ provider }).machine

function allStates(node: {
  key: string
  states: Record<string, any>
}): { key: string; tags: string[]; type: string; states: Record<string, any> }[] {
  return Object.values(node.states).flatMap((child) => [child, ...allStates(child)])
}

describe('statechartToMermaid', () => {
  const text = statechartToMermaid(machine)
  const lines = text.split('\n')

  it('declares every state of the agent machine, nested in its parent', () => {
    expect(lines[0]).toBe('stateDiagram-v2')
    const states = allStates(machine.root as never)
    expect(states.length).toBeGreaterThan(25)
    for (const state of states) {
      const compound = Object.keys(state.states).length > 0
      expect(text).toMatch(
        compound ? new RegExp(`^\\s*state ${state.key} \\{$`, 'm') : new RegExp(`^\\s*${state.key} : ${state.key}$`, 'm'),
      )
    }
    // Nesting: a state is declared inside its parent's block (indentation grows by two per level).
    expect(lines).toContain('        awaitingApproval : awaitingApproval')
    expect(lines).toContain('      state toolCalls {')
    expect(lines).toContain('  [*] --> idle')
    expect(lines).toContain('        [*] --> nextCall')
    expect(lines).toContain('  done --> [*]')
  })

  it('annotates and styles every hook point (and the waits)', () => {
    expect(HOOK_POINTS.length).toBe(5)
    for (const hook of HOOK_POINTS) {
      const running = `running${hook[0]?.toUpperCase()}${hook.slice(1)}`
      expect(text).toMatch(new RegExp(`^\\s*${hook} : \\[hook point\\] Hook point - `, 'm'))
      expect(text).toMatch(
        new RegExp(`^\\s*${running} : \\[hook point, wait\\] Hook point ${hook} - waiting for the hooks\\.$`, 'm'),
      )
    }
    const hookClass = lines.find((line) => line.startsWith('  class ') && line.endsWith(' hook'))
    const tagged = allStates(machine.root as never)
      .filter((s) => s.tags.includes('hook'))
      .map((s) => s.key)
    expect(tagged).toHaveLength(10)
    expect(hookClass?.slice('  class '.length, -' hook'.length).split(',').sort()).toEqual(tagged.sort())
    expect(text).toMatch(/^\s*awaitingApproval : \[wait, human\] Waiting for a reviewer's decision/m)
    expect(text).toContain('  class awaitingApproval human')
    expect(text).toContain('  classDef hook ')
  })

  it('draws transitions with their events, guards, invocations and delays', () => {
    expect(lines).toContain('  idle --> running : agent.start')
    expect(lines).toContain('  awaitingApproval --> executingTool : approval.decision [decisionApproves]')
    // The approval deadline is a named actor on an absolute time (durable runs re-arm it), not `after`.
    expect(lines).toContain('  awaitingApproval --> afterToolExecution : deadline.reached')
    // A wait's work answers with work.done (the run's worker does every wait's work).
    // A guard asked with a value (an exit's route) shows it.
    expect(lines).toContain('  callingModel --> toolCalls : work.done [modelAnswered(tool-calls)]')
    expect(lines).toContain('  beforeTurn --> runningBeforeTurn : [hasBeforeTurn]')
    expect(lines).toContain('  approvalCheck --> awaitingApproval : [approvalAlways]')
    expect(lines).toContain('  nextTurn --> turn')
    // Labels never carry characters that break Mermaid.
    for (const line of lines.filter((l) => l.includes(' : '))) expect(line.split(' : ')[1]).not.toMatch(/[:;"{}#]/)
  })

  it('brief: no descriptions and no guards', () => {
    const brief = statechartToMermaid(machine, { descriptions: false, guards: false, direction: 'LR' })
    expect(brief).toContain('  direction LR')
    expect(brief).toContain('      beforeTurn : [hook point]\n')
    expect(brief).not.toContain('[hasBeforeTurn]')
    expect(brief).not.toContain('Waiting for a reviewer')
  })

  it('keeps states with the same name apart in any machine', () => {
    const other = createMachine({
      id: 'm',
      initial: 'a',
      states: {
        a: { initial: 'idle', states: { idle: { on: { go: '#m.b.idle' } } } },
        b: { initial: 'idle', states: { idle: { type: 'final' } } },
      },
    })
    const mm = statechartToMermaid(other)
    expect(mm).toContain('state "idle" as a_idle')
    expect(mm).toContain('state "idle" as b_idle')
    expect(mm).toContain('  a_idle --> b_idle : go')
  })
})
