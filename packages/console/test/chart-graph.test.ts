/** The agent machine as the console draws it: the loop, its exits collapsed, its edges labelled. */
import { createAgent, type Provider, ProviderError } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { chartGraph } from '../src/chart-graph.ts'

const provider: Provider = {
  model: 'none',
  complete: async () => {
    throw new ProviderError('never called', { retryable: false })
  },
}
const machine = createAgent({ id: 'chart', provider }).machine
const graph = chartGraph(machine)
const edge = (from: string, to: string) => graph.edges.find((e) => e.from === from && e.to === to)
const T = 'running.turn'
const C = `${T}.toolCalls`

describe('chartGraph', () => {
  it('draws every state of the machine', () => {
    const ids = graph.nodes.map((n) => n.id)
    for (const id of [
      'idle',
      'running',
      T,
      `${T}.callingModel`,
      C,
      `${C}.awaitingApproval`,
      `${C}.executingTool`,
      'done',
      'failed',
      'cancelled',
    ])
      expect(ids).toContain(id)
  })

  it('collapses the failure and cancel exits into one edge each from the running state', () => {
    const into = (id: string) => graph.edges.filter((e) => e.to === id)
    expect(into('failed').map((e) => [e.from, e.collapsed])).toEqual([['running', true]])
    expect(into('failed')[0]?.label).toContain('work.error')
    expect(
      into('cancelled')
        .map((e) => e.from)
        .sort(),
    ).toEqual(['idle', 'running'])
    expect(edge('running', 'cancelled')?.label).toContain('agent.cancel')
    // Before: one edge from each wait that can fail (every hook, the model, the tool, the approval rule).
    expect(graph.edges.filter((e) => e.collapsed)).toHaveLength(2)
  })

  it('labels edges with their events (eventless ones with their guard)', () => {
    expect(edge(`${C}.awaitingApproval`, `${C}.executingTool`)?.label).toBe('approval.decision')
    expect(edge(`${C}.awaitingApproval`, `${C}.steeringCheck`)?.label).toBe('agent.steer')
    expect(edge(`${C}.awaitingApproval`, `${C}.afterToolExecution`)?.label.split(' · ').sort()).toEqual([
      'approval.decision',
      'approval.unavailable',
      'deadline.reached',
    ])
    expect(edge('idle', 'running')?.label).toBe('agent.start')
    expect(edge(`${T}.callingModel`, `${T}.waitingToRetry`)?.label).toBe('work.error')
    expect(edge(`${C}.approvalCheck`, `${C}.awaitingApproval`)?.label).toBe('[approvalAlways]')
  })

  it('draws the loop step by step: shortcuts over pass-through states are left to the path they skip', () => {
    // The machine goes from the model's reply straight to the tool; the chart shows the way through the checks.
    expect(edge(`${T}.callingModel`, `${C}.executingTool`)).toBeUndefined()
    expect(edge(`${T}.callingModel`, C)).toBeDefined()
    expect(edge(`${C}.nextCall`, `${C}.steeringCheck`)).toBeDefined()
    expect(edge(`${C}.approvalCheck`, `${C}.executingTool`)).toBeDefined()
    // The loop closes: the end of a turn with tool calls goes round to the next turn.
    expect(edge(`${T}.turnEnd`, 'running.nextTurn')).toBeDefined()
    expect(edge('running.nextTurn', T)).toBeDefined()
    expect(edge(`${T}.turnEnd`, 'done')).toBeDefined()
    // Other outcomes of a step are kept: a correction, an invalid call, a denial.
    expect(edge(`${C}.steeringCheck`, `${C}.afterToolExecution`)?.label).toContain('[callSteered]')
    expect(edge(`${C}.validatingArguments`, `${C}.afterToolExecution`)).toBeDefined()
    expect(edge(`${C}.runningBeforeToolExecution`, `${C}.afterToolExecution`)).toBeDefined()
  })

  it('leaves no state unreachable or without a way out', () => {
    const leaves = graph.nodes.filter((n) => !n.compound)
    const inside = (id: string, ancestor: string) => id === ancestor || id.startsWith(`${ancestor}.`)
    for (const node of leaves) {
      if (node.id !== 'idle')
        expect(
          graph.edges.some((e) => inside(node.id, e.to) || e.to === node.id),
          `${node.id} has no way in`,
        ).toBe(true)
      if (!node.final)
        expect(
          graph.edges.some((e) => inside(node.id, e.from)),
          `${node.id} has no way out`,
        ).toBe(true)
    }
  })

  it('gives equal graphs equal keys, and another machine another key', () => {
    expect(chartGraph(createAgent({ id: 'other', provider }).machine).key).toBe(graph.key)
    const smaller = { root: { ...(machine.root as object), states: {} } }
    expect(chartGraph(smaller).key).not.toBe(graph.key)
  })
})
