/**
 * Delegation: an agent as a tool. The child runs its own loop (its own hooks, its own reviewer)
 * wherever it lives; its final answer is what the parent's model reads.
 */

import { type AgentSystem, delegateTool } from '@signalbox/actors/system'
import { allow, deny, type Hooks, ScriptedReviewer, tool } from '@signalbox/core'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { afterToolResult, agent, answer, call, ofType, REMOTE_TOPOLOGIES, TOPOLOGIES, topology } from './harness.ts'

const TASK = 'Restock slot B3 with 12 plush ñandús and report the new count.'
const CHILD_ANSWER = 'Slot B3 now holds 12 plush ñandús (crate SERIAL-***).'

/** The parent, written once: it only knows the child's id. */
function planner(system: AgentSystem) {
  return agent({
    id: 'planner',
    tools: [delegateTool(system, 'stocker')],
    script: [call('ask_stocker', { task: TASK }), answer('Done: B3 is full again.', { expect: afterToolResult(CHILD_ANSWER) })],
  })
}

/** The child with its own policy hook, masking hook and reviewer. */
function stocker() {
  const restocked: { slot: string; count: number }[] = []
  const restock = tool({
    name: 'restock_slot',
    description: 'Moves prizes from the back room into a slot. Irreversible.',
    schema: z.object({ slot: z.string(), count: z.number().int() }),
    needsApproval: true,
    execute: ({ slot, count }) => {
      restocked.push({ slot, count })
      return `Slot ${slot} now holds ${count} (crate SERIAL-4711).`
    },
  })
  const hooks: Hooks = {
    beforeToolExecution: async ({ input }) =>
      (input as { slot?: string }).slot === 'Z9' ? deny('Slot Z9 is closed for repairs.') : allow(),
    afterToolExecution: async ({ output }) => output.replace(/SERIAL-\d+/g, 'SERIAL-***'),
  }
  const reviewer = new ScriptedReviewer([true], { name: 'stockroom-lead' })
  const child = agent({
    id: 'stocker',
    tools: [restock],
    hooks,
    reviewer,
    script: [
      call('restock_slot', { slot: 'Z9', count: 12 }),
      call('restock_slot', { slot: 'B3', count: 12 }, { expect: afterToolResult('Slot Z9 is closed for repairs.') }),
      answer(CHILD_ANSWER, { expect: afterToolResult('SERIAL-***') }),
    ],
  })
  return { ...child, reviewer, restocked }
}

describe.each(TOPOLOGIES)('delegateTool (%s)', (name) => {
  it("the child's final answer is the parent's tool result; the child keeps its own hooks and reviewer", async () => {
    const t = await topology(name)
    const parent = planner(t.parent)
    const child = stocker()
    t.parent.add(parent.agent)
    t.child.add(child.agent)
    await t.start()
    if (t.remote) expect(t.parent.get('stocker')).toBeUndefined()

    const result = await t.parent.run('planner', 'Please keep the machine stocked.')
    expect(result.status).toBe('done')
    expect(result.output).toBe('Done: B3 is full again.')
    expect(result.finishedBy).toBe('planner')
    parent.provider.assertDone()
    child.provider.assertDone()

    // What the parent's model read: exactly the child's final answer (masked by the child's hook).
    const delegated = parent.provider.requests[1]?.messages.at(-1)
    expect(delegated).toMatchObject({ role: 'tool', content: CHILD_ANSWER })
    expect(JSON.stringify(parent.provider.requests)).not.toContain('SERIAL-4711')

    // The child's policy hook refused Z9 (the tool never ran for it); its reviewer approved B3.
    expect(child.restocked).toEqual([{ slot: 'B3', count: 12 }])
    expect(child.reviewer.requests).toHaveLength(1)
    expect(child.reviewer.requests[0]).toMatchObject({
      agentId: 'stocker',
      toolName: 'restock_slot',
      arguments: { slot: 'B3', count: 12 },
      runPath: [result.runId],
      agentPath: ['planner'],
    })

    // The child's run is a node of the tree: its events say so.
    const started = ofType(child.events, 'run.start')
    expect(started).toHaveLength(1)
    expect(started[0]).toMatchObject({
      agentId: 'stocker',
      parentRunId: result.runId,
      runPath: [result.runId],
      agentPath: ['planner'],
      input: TASK,
    })
    expect(ofType(child.events, 'run.end')[0]).toMatchObject({ status: 'done', output: CHILD_ANSWER })
    // The parent's own events are a root's.
    const root = ofType(parent.events, 'run.start')[0]
    expect(root?.runPath).toEqual([])
    expect(root?.parentRunId).toBeUndefined()
  })
})

describe.each(REMOTE_TOPOLOGIES)('delegateTool to an agent nobody serves (%s)', (name) => {
  it('the model reads AGENT_UNAVAILABLE and the parent goes on', async () => {
    const t = await topology(name)
    const parent = agent({
      id: 'planner',
      tools: [delegateTool(t.parent, 'ghost')],
      script: [
        call('ask_ghost', { task: 'Anyone there?' }),
        answer('Nobody answered.', { expect: afterToolResult('AGENT_UNAVAILABLE') }),
      ],
    })
    t.parent.add(parent.agent)
    const result = await t.parent.run('planner', 'Ask the ghost.')
    expect(result.output).toBe('Nobody answered.')
    const ended = ofType(parent.events, 'tool.end')[0]
    expect(ended).toMatchObject({ toolName: 'ask_ghost', isError: true, outcome: 'failed' })
    expect(ended?.output).toContain('No host serves agent "ghost"')
  })
})
