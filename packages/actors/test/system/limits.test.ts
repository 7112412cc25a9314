/**
 * Supervision limits of a run tree: children running at once per parent, depth, and the turns
 * and tokens of the whole tree (root and children, in whichever process they run).
 */

import { delegateTool, fanOutTool } from '@signalbox/actors/system'
import { RunFailedError } from '@signalbox/core'
import type { RecordedRequest } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import {
  afterToolResult,
  agent,
  answer,
  blockingTool,
  call,
  concurrencyProbe,
  ofType,
  REMOTE_TOPOLOGIES,
  TOPOLOGIES,
  taskOf,
  topology,
} from './harness.ts'

const TASKS = ['alpha', 'bravo', 'charlie', 'delta', 'echo']

describe.each(TOPOLOGIES)('limits (%s)', (name) => {
  it('maxConcurrentChildren: more children than slots wait their turn; all finish, answers in order', async () => {
    const t = await topology(name, { limits: { maxConcurrentChildren: 2 } })
    const probe = concurrencyProbe('work', 80)
    const supervisor = agent({
      id: 'supervisor',
      tools: [fanOutTool(t.parent, 'worker')],
      script: [
        call('ask_worker_each', { tasks: TASKS }),
        answer('All five done.', { expect: afterToolResult(TASKS.map((task, i) => `${i + 1}. ${task} is done`).join('\n')) }),
      ],
    })
    const worker = agent({
      id: 'worker',
      tools: [probe.tool],
      // Every worker run: do the work, then report. Runs interleave, so answer from the request.
      script: (request: RecordedRequest) =>
        request.messages.at(-1)?.role === 'tool'
          ? { content: `${taskOf(request)} is done` }
          : { toolCalls: [{ name: 'work', arguments: { item: taskOf(request) } }] },
    })
    t.parent.add(supervisor.agent)
    t.child.add(worker.agent)
    await t.start()
    const result = await t.parent.run('supervisor', 'Do all five.')
    expect(result.output).toBe('All five done.')
    expect(probe.stats.calls.sort()).toEqual([...TASKS].sort())
    // The fan-out asked for five at once; the system let two run.
    expect(probe.stats.max).toBe(2)
    const children = ofType(worker.events, 'run.start')
    expect(children).toHaveLength(5)
    for (const child of children)
      expect(child).toMatchObject({ parentRunId: result.runId, runPath: [result.runId], agentPath: ['supervisor'] })
  })

  it('maxDepth: a delegation deeper than the limit is refused with TREE_DEPTH_EXCEEDED', async () => {
    const t = await topology(name, { limits: { maxDepth: 1 } })
    const root = agent({
      id: 'root',
      tools: [delegateTool(t.parent, 'middle')],
      script: [
        call('ask_middle', { task: 'Ask further down.' }),
        answer('The chain stopped at depth 1.', { expect: afterToolResult('TREE_DEPTH_EXCEEDED') }),
      ],
    })
    const middle = agent({
      id: 'middle',
      tools: [delegateTool(t.child, 'leaf')],
      script: [
        call('ask_leaf', { task: 'Go deeper.' }),
        answer('I could not go deeper: TREE_DEPTH_EXCEEDED.', { expect: afterToolResult('TREE_DEPTH_EXCEEDED') }),
      ],
    })
    const leaf = agent({ id: 'leaf', script: [] })
    t.parent.add(root.agent)
    t.child.add(middle.agent).add(leaf.agent)
    await t.start()
    const result = await t.parent.run('root', 'Delegate as deep as you can.')
    expect(result.output).toBe('The chain stopped at depth 1.')
    const refused = ofType(middle.events, 'tool.end')[0]
    expect(refused).toMatchObject({ toolName: 'ask_leaf', isError: true })
    expect(refused?.output).toContain('TREE_DEPTH_EXCEEDED')
    expect(refused?.output).toContain('2 levels deep; the limit is 1')
    // The leaf never started.
    expect(leaf.events).toEqual([])
    expect(leaf.provider.requests).toEqual([])
  })

  it('maxTotalTurns: the turns of root and children add up; the tree stops when they are spent', async () => {
    const t = await topology(name, { limits: { maxTotalTurns: 3 } })
    const looping = blockingTool('unused')
    const root = agent({
      id: 'root',
      tools: [delegateTool(t.parent, 'looper')],
      // A second turn would be needed after the child: the tree has none left.
      script: [call('ask_looper', { task: 'Keep going.' }), answer('never sent')],
    })
    const looper = agent({
      id: 'looper',
      tools: [looping.tool, concurrencyProbe('step', 1).tool],
      script: (request) => ({ toolCalls: [{ name: 'step', arguments: { item: String(request.messages.length) } }] }),
    })
    t.parent.add(root.agent)
    t.child.add(looper.agent)
    await t.start()
    const failure = await t.parent.run('root', 'Go.').catch((error: unknown) => error)
    expect(failure).toBeInstanceOf(RunFailedError)
    expect((failure as RunFailedError).code).toBe('TREE_BUDGET_EXCEEDED')
    expect((failure as RunFailedError).message).toContain('3 of its 3 turns')
    // Stopped before a model call the tree had no room for, not cancelled mid-turn.
    expect((failure as RunFailedError).result).toMatchObject({ status: 'failed', stopReason: 'budget', turns: 1 })
    // Root: 1 turn. Child: the 2 turns left, then it failed its own (lowered) limit.
    expect(root.provider.requests).toHaveLength(1)
    expect(looper.provider.requests).toHaveLength(2)
    expect(ofType(looper.events, 'run.end')[0]).toMatchObject({ status: 'failed', error: { code: 'MAX_TURNS_EXCEEDED' } })
  })

  it('maxTotalRuns: the runs of the tree, root included, in every process; one more is refused', async () => {
    const t = await topology(name, { limits: { maxTotalRuns: 3 } })
    const root = agent({
      id: 'root',
      tools: [delegateTool(t.parent, 'middle')],
      script: [call('ask_middle', { task: 'one' }), call('ask_middle', { task: 'two' }), answer('Done.')],
    })
    const middle = agent({
      id: 'middle',
      tools: [delegateTool(t.child, 'leaf')],
      script: [call('ask_leaf', { task: 'a' }), call('ask_leaf', { task: 'b' }), answer('middle done')],
    })
    const leaf = agent({ id: 'leaf', script: [answer('leaf done')] })
    t.parent.add(root.agent)
    t.child.add(middle.agent).add(leaf.agent)
    await t.start()
    expect((await t.parent.run('root', 'Go.')).output).toBe('Done.')
    // root, middle, leaf: 3 runs. The middle's second child and the root's second one are refused.
    expect(leaf.provider.requests).toHaveLength(1)
    const middleCalls = ofType(middle.events, 'tool.end')
    expect(middleCalls.map((e) => e.isError)).toEqual([false, true])
    expect(middleCalls[1]?.output).toContain('started all of its')
    const rootCalls = ofType(root.events, 'tool.end')
    expect(rootCalls.map((e) => e.isError)).toEqual([false, true])
    expect(rootCalls[1]?.output).toContain('TREE_BUDGET_EXCEEDED')
    expect(ofType(middle.events, 'run.start')).toHaveLength(1)
  })

  it('maxTotalTokens: the tree is stopped when root and children together go over', async () => {
    const t = await topology(name, { limits: { maxTotalTokens: 100 } })
    const usage = { promptTokens: 40, completionTokens: 10 }
    const root = agent({
      id: 'root',
      tools: [delegateTool(t.parent, 'spender')],
      script: [
        call('ask_spender', { task: 'Spend.' }, { usage: { promptTokens: 5, completionTokens: 5 } }),
        answer('never sent'),
      ],
    })
    const spender = agent({
      id: 'spender',
      tools: [concurrencyProbe('step', 1).tool],
      script: (request) => ({ toolCalls: [{ name: 'step', arguments: { item: String(request.messages.length) } }], usage }),
    })
    t.parent.add(root.agent)
    t.child.add(spender.agent)
    await t.start()
    const failure = await t.parent.run('root', 'Go.').catch((error: unknown) => error)
    expect((failure as RunFailedError).code).toBe('TREE_BUDGET_EXCEEDED')
    expect((failure as RunFailedError).message).toMatch(/of its 100 tokens/)
    // 10 (root) + 50 + 50 (child) went over 100: the child's third call never happened.
    expect(spender.provider.requests).toHaveLength(2)
    expect(root.provider.requests).toHaveLength(1)
    const childEnd = ofType(spender.events, 'run.end')[0]
    expect(childEnd?.status === 'cancelled' || childEnd?.error?.code === 'BUDGET_EXCEEDED').toBe(true)
  })
})

describe.each(REMOTE_TOPOLOGIES)('limits on the host (%s)', (name) => {
  it('the root’s limits travel with the tree: a host with no limits of its own holds the grandchild to them', async () => {
    const t = await topology(name, { limits: { maxDepth: 1 }, childLimits: {} })
    const root = agent({
      id: 'root',
      tools: [delegateTool(t.parent, 'middle')],
      script: [call('ask_middle', { task: 'Go deeper.' }), answer('Done.')],
    })
    const middle = agent({
      id: 'middle',
      tools: [delegateTool(t.child, 'leaf')],
      script: [
        call('ask_leaf', { task: 'Deeper still.' }),
        answer('Refused.', { expect: afterToolResult('the run tree’s limit is 1') }),
      ],
    })
    const leaf = agent({ id: 'leaf', script: [] })
    t.parent.add(root.agent)
    t.child.add(middle.agent).add(leaf.agent)
    await t.start()
    expect((await t.parent.run('root', 'Go.')).output).toBe('Done.')
    expect(ofType(middle.events, 'tool.end')[0]?.output).toContain('TREE_DEPTH_EXCEEDED')
    expect(leaf.events).toEqual([])
  })

  it('the turns the tree has left travel with it: the host holds the child’s own children to them', async () => {
    const t = await topology(name, { limits: { maxTotalTurns: 4 }, childLimits: {} })
    const root = agent({
      id: 'root',
      tools: [delegateTool(t.parent, 'middle')],
      script: [call('ask_middle', { task: 'Go.' }), answer('Done.')],
    })
    const middle = agent({
      id: 'middle',
      tools: [delegateTool(t.child, 'looper')],
      script: [call('ask_looper', { task: 'Keep going.' }), answer('never sent')],
    })
    const looper = agent({
      id: 'looper',
      tools: [concurrencyProbe('step', 1).tool],
      script: (request) => ({ toolCalls: [{ name: 'step', arguments: { item: String(request.messages.length) } }] }),
    })
    t.parent.add(root.agent)
    t.child.add(middle.agent).add(looper.agent)
    await t.start()
    expect((await t.parent.run('root', 'Go.')).output).toBe('Done.')
    // Root 1 turn, middle 1: the looper gets the 2 the tree had left (not its own 10), and then
    // the middle's subtree has spent the 3 it was given.
    expect(looper.provider.requests).toHaveLength(2)
    expect(ofType(middle.events, 'tool.end')[0]?.output).toContain('maxTurns=2')
    expect(middle.provider.requests).toHaveLength(1)
    expect(ofType(root.events, 'tool.end')[0]?.output).toContain('TREE_BUDGET_EXCEEDED')
  })

  it('a host refuses a run deeper than its own maxDepth, whatever the parent allows', async () => {
    const t = await topology(name, { limits: { maxDepth: 8 }, childLimits: { maxDepth: 0 } })
    const root = agent({
      id: 'root',
      tools: [delegateTool(t.parent, 'child')],
      script: [call('ask_child', { task: 'Hello?' }), answer('Refused.', { expect: afterToolResult("this host's limit is 0") })],
    })
    const child = agent({ id: 'child', script: [] })
    t.parent.add(root.agent)
    t.child.add(child.agent)
    await t.start()
    const result = await t.parent.run('root', 'Go.')
    expect(result.output).toBe('Refused.')
    expect(ofType(root.events, 'tool.end')[0]?.output).toContain('TREE_DEPTH_EXCEEDED')
    expect(child.events).toEqual([])
  })
})
