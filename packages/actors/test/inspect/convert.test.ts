/**
 * The converter: XState inspection events of a real agent run → the Stately inspector's wire format,
 * with session ids unique per runtime and contents private unless opted in.
 */

import {
  createInspectionConverter,
  createStatelyInspector,
  type InspectorWireEvent,
  isInspectorWireEvent,
} from '@signalbox/actors/inspect'
import { STATELY_INSPECT_VERSION } from '@signalbox/actors/internal'
import { createAgent } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { createActor, createMachine } from 'xstate'
import { ofType, privateAgent, SECRETS, secretsIn, tick } from './helpers.ts'

async function inspectRun(options: { runtimeId?: string; includeContents?: boolean } = {}) {
  const events: InspectorWireEvent[] = []
  const inspector = createStatelyInspector({
    runtimeId: options.runtimeId ?? 'rt-a',
    includeContents: options.includeContents,
    send: (e) => events.push(e),
  })
  const agent = privateAgent({ inspect: inspector.inspect })
  const result = await agent.run(`Find customer ${SECRETS.input}`)
  await tick()
  return { events, result, agent }
}

describe('inspection converter', () => {
  it('turns a run into @xstate.actor / @xstate.event / @xstate.snapshot in the Stately wire format', async () => {
    const { events, result } = await inspectRun()
    const run = `run:${result.runId}`
    expect(events.every(isInspectorWireEvent)).toBe(true)
    expect(new Set(events.map((e) => e.type))).toEqual(new Set(['@xstate.actor', '@xstate.event', '@xstate.snapshot']))

    const [first] = events
    expect(first).toMatchObject({
      type: '@xstate.actor',
      sessionId: run,
      rootId: run,
      parentId: undefined,
      name: `clerk ${result.runId}`,
    })
    const definition = JSON.parse((first as { definition: string }).definition)
    expect(definition.id).toBe('agent')
    expect(Object.keys(definition.states)).toEqual(['idle', 'running', 'done', 'failed', 'cancelled'])
    expect(definition.states.running.states.turn.states.toolCalls.states.awaitingApproval.tags).toEqual(['wait', 'human'])
    // Functions are replaced, as @statelyai/inspect does; data (context, inputs, params) is left out.
    // Each wait's work is started by its entry and answered with `work.done` / `work.error` (the run's worker).
    const callingModel = definition.states.running.states.turn.states.callingModel
    expect(callingModel.invoke).toBeUndefined()
    expect(Object.keys(callingModel.on)).toEqual(expect.arrayContaining(['work.done', 'work.error']))
    expect(callingModel.entry).toEqual(['emitModelRequest', { type: 'startWork' }])
    expect(callingModel.exit).toBe('stopWork')
    // The work is done by the run's worker, a plain object beside the run's actor: nothing is invoked.
    expect(definition.invoke).toBeUndefined()
    expect(definition.context).toBeUndefined()

    for (const event of events) {
      expect(event.rootId).toBe(run)
      expect(event._version).toBe(STATELY_INSPECT_VERSION)
      expect(event.createdAt).toMatch(/^\d{13}$/)
      expect(event.sessionId === run || event.sessionId.startsWith('rt-a:x:')).toBe(true)
    }
    expect(new Set(events.map((e) => e.id)).size).toBe(events.length)

    // Every actor is announced before anything else mentions it; children point at the run.
    const announced = new Set<string>()
    for (const event of events) {
      if (event.type === '@xstate.actor') {
        if (event.parentId !== undefined) expect(announced.has(event.parentId)).toBe(true)
        announced.add(event.sessionId)
        continue
      }
      expect(announced.has(event.sessionId)).toBe(true)
      if (event.type === '@xstate.event' && event.sourceId !== undefined) expect(announced.has(event.sourceId)).toBe(true)
    }
    const children = ofType(events, '@xstate.actor').slice(1)
    // No child actor: the run's worker, which does every wait's work, is not an actor.
    expect(children.map((c) => c.name)).toEqual([])
    for (const child of children) expect(child.parentId).toBe(run)

    const runStates = ofType(events, '@xstate.snapshot')
      .filter((e) => e.sessionId === run)
      .map((e) => JSON.stringify(e.snapshot.value))
    expect(runStates).toEqual([
      '"idle"',
      '{"running":{"turn":"callingModel"}}',
      '{"running":{"turn":{"toolCalls":"awaitingApproval"}}}',
      '{"running":{"turn":{"toolCalls":"executingTool"}}}',
      '{"running":{"turn":{"toolCalls":"runningAfterToolExecution"}}}',
      '{"running":{"turn":"callingModel"}}',
      '"done"',
    ])
    const waiting = ofType(events, '@xstate.snapshot').find((e) =>
      JSON.stringify(e.snapshot.value ?? null).includes('awaitingApproval'),
    )
    expect(waiting?.snapshot.tags).toEqual(['wait', 'human'])
    expect(waiting?.event.type).toBe('work.done')
    // The decision arrives from the worker (the approval wait's work), sent to the run from outside any actor.
    const decision = ofType(events, '@xstate.event').find((e) => e.event.type === 'approval.decision')
    expect(decision?.sessionId).toBe(run)
    expect(decision?.sourceId).toBeUndefined()
    // Microsteps, transitions and actions are not sent.
    expect(events.some((e) => (e.type as string).includes('microstep') || (e.type as string).includes('action'))).toBe(false)
  })

  it('is private by default: ids, counters and states, never contents (raw or masked ids included)', async () => {
    const { events, result } = await inspectRun()
    expect(result.output).toContain(SECRETS.answer)
    expect(JSON.stringify(result.messages)).toContain(SECRETS.maskedId)
    expect(secretsIn(events)).toEqual([])

    const waiting = ofType(events, '@xstate.snapshot').find((e) =>
      JSON.stringify(e.snapshot.value ?? null).includes('awaitingApproval'),
    )
    const context = waiting?.snapshot.context as Record<string, any>
    expect(context).toMatchObject({ agentId: 'clerk', runId: result.runId, turn: 1, messages: 3, calls: 1, status: 'idle' })
    expect(context.current).toMatchObject({ callId: 'call_1', toolName: 'lookup' })
    expect(context.current.approval.requestId).toMatch(/^request_/)
    expect(Object.keys(context.current)).not.toContain('args')

    const done = ofType(events, '@xstate.snapshot').findLast((e) => e.sessionId === `run:${result.runId}`)
    expect(done?.snapshot).toMatchObject({
      status: 'done',
      value: 'done',
      context: { status: 'done', stopReason: 'final_answer', messages: 5 },
    })
    expect(done?.snapshot.output).toMatchObject({ status: 'done', stopReason: 'final_answer', turns: 2, messages: 5 })

    const decision = ofType(events, '@xstate.event').find((e) => e.event.type === 'approval.decision')
    expect(decision?.event).toEqual({
      type: 'approval.decision',
      decision: { requestId: context.current.approval.requestId, callId: 'call_1', approved: true },
    })
    const init = ofType(events, '@xstate.event').find((e) => e.event.type === 'xstate.init')
    expect(init?.event).toEqual({ type: 'xstate.init' })
    // Invoked actors' snapshots carry their input (the whole context) and output (replies, results): dropped.
    for (const snapshot of ofType(events, '@xstate.snapshot').filter((e) => e.sessionId.startsWith('rt-a:'))) {
      expect(Object.keys(snapshot.snapshot).sort()).toEqual(['status'])
    }
  })

  it('passes everything through with includeContents: true (explicit opt-in)', async () => {
    const { events } = await inspectRun({ includeContents: true })
    expect(secretsIn(events).sort()).toEqual(Object.values(SECRETS).sort())
    const done = ofType(events, '@xstate.snapshot').filter((e) => e.snapshot.status === 'done' && e.snapshot.value === 'done')[0]
    expect((done?.snapshot.context as { messages?: unknown[] } | undefined)?.messages).toHaveLength(5)
  })

  it('keeps session ids apart between runtimes; run ids are global', async () => {
    const a = await inspectRun({ runtimeId: 'proc-a' })
    const b = await inspectRun({ runtimeId: 'proc-b' })
    const ids = (events: InspectorWireEvent[]) => new Set(ofType(events, '@xstate.actor').map((e) => e.sessionId))
    const idsA = ids(a.events)
    const idsB = ids(b.events)
    expect([...idsA].filter((id) => idsB.has(id))).toEqual([])
    expect([...idsA].filter((id) => !id.startsWith('run:')).every((id) => id.startsWith('proc-a:'))).toBe(true)
    expect(idsA.has(`run:${a.result.runId}`)).toBe(true)
    const definitionOf = (events: InspectorWireEvent[]) => ofType(events, '@xstate.actor')[0]?.definition
    expect(definitionOf(a.events)).toBe(definitionOf(b.events))
  })

  it('points a delegated run at its parent run, even in another process', async () => {
    const events: InspectorWireEvent[] = []
    const inspector = createStatelyInspector({ runtimeId: 'rt', send: (e) => events.push(e) })
    const agent = createAgent({
      id: 'child',
      provider: new ScriptedProvider({ script: [{ content: 'ok' }] }),
      inspect: inspector.inspect,
    })
    const result = await agent.run('sub task', { runId: 'run_child', parentRunId: 'run_parent', runPath: ['run_parent'] })
    expect(result.status).toBe('done')
    expect(ofType(events, '@xstate.actor')[0]).toMatchObject({
      sessionId: 'run:run_child',
      parentId: 'run:run_parent',
      rootId: 'run:run_child',
    })
  })

  it('never throws into the agent: a failing send is reported, the run goes on', async () => {
    const errors: unknown[] = []
    const inspector = createStatelyInspector({
      runtimeId: 'rt',
      send: () => {
        throw new Error('socket gone')
      },
      onError: (error) => errors.push(error),
    })
    const result = await privateAgent({ inspect: inspector.inspect }).run('go')
    expect(result.status).toBe('done')
    expect(errors.length).toBeGreaterThan(10)
  })

  it('converts any XState machine: generic contexts keep numbers, booleans and ids only', () => {
    const converter = createInspectionConverter({ runtimeId: 'rt', now: () => 1_700_000_000_000 })
    const out: InspectorWireEvent[] = []
    const machine = createMachine({
      id: 'door',
      initial: 'closed',
      context: { openedBy: 'PERSON-SECRET', doorId: 'd1', count: 2, log: ['a', 'b'] },
      states: { closed: { on: { open: 'opened' } }, opened: {} },
    })
    const actor = createActor(machine, { inspect: (event) => out.push(...converter.convert(event)) })
    actor.start()
    actor.send({ type: 'open', by: 'PERSON-SECRET', callId: 'c1' } as never)
    out.push(...converter.flush())
    expect(JSON.stringify(out)).not.toContain('PERSON-SECRET')
    const actorEvent = ofType(out, '@xstate.actor')[0]
    expect(actorEvent).toMatchObject({ name: 'door', createdAt: '1700000000000' })
    expect(actorEvent?.sessionId).toMatch(/^rt:x:\d+$/)
    expect(ofType(out, '@xstate.snapshot').at(-1)?.snapshot).toMatchObject({
      value: 'opened',
      context: { doorId: 'd1', count: 2, log: 2 },
    })
    expect(ofType(out, '@xstate.event').at(-1)?.event).toEqual({ type: 'open', callId: 'c1' })
  })
})
