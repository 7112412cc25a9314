/**
 * The bus inspector (one runtime's events on `<prefix>.inspect.<runtimeId>`) and the participants
 * that are not XState machines (reviewers, tools, tool hosts), on the in-process bus.
 */

import { remoteTool, serveTools } from '@signalbox/actors'
import {
  createBusInspector,
  type InspectorWireEvent,
  inspectReviewer,
  inspectTool,
  inspectToolHost,
  isInspectorWireEvent,
} from '@signalbox/actors/inspect'
import { policyReviewer } from '@signalbox/core'
import { createInProcessBus, createSubjects } from '@signalbox/core/bus'
import { describe, expect, it, onTestFinished } from 'vitest'
import { uniquePrefix } from '../../../../test/support/env.ts'
import { lookupTool, ofType, privateAgent, SECRETS, secretsIn, tick } from './helpers.ts'

function setup(options: { maxPayload?: number } = {}) {
  const prefix = uniquePrefix()
  const subjects = createSubjects(prefix)
  const bus = createInProcessBus(options.maxPayload ? { maxPayload: options.maxPayload } : {})
  onTestFinished(() => bus.close())
  const received: { subject: string; event: InspectorWireEvent }[] = []
  bus.subscribe(`${prefix}.inspect.*`, (message) => {
    received.push({ subject: message.subject, event: JSON.parse(message.text()) })
  })
  return { bus, subjects, prefix, received, events: () => received.map((r) => r.event) }
}

describe('bus inspector', () => {
  it('publishes each converted event on <prefix>.inspect.<runtimeId>, privately', async () => {
    const { bus, subjects, prefix, received, events } = setup()
    const inspector = createBusInspector({ bus, subjects, runtimeId: 'worker-1' })
    expect(inspector.subject).toBe(`${prefix}.inspect.worker-1`)
    const result = await privateAgent({ inspect: inspector.inspect }).run(`Find ${SECRETS.input}`)
    await tick()
    // The run, its worker, their events and snapshots (the run's states).
    expect(received.length).toBeGreaterThan(10)
    expect(received.every((r) => r.subject === `${prefix}.inspect.worker-1` && isInspectorWireEvent(r.event))).toBe(true)
    expect(inspector.published).toBe(received.length)
    expect(inspector.dropped).toBe(0)
    expect(events()[0]).toMatchObject({ type: '@xstate.actor', sessionId: `run:${result.runId}` })
    expect(secretsIn(events())).toEqual([])
  })

  it('skips events larger than the bus carries; the run is not affected', async () => {
    const { bus, subjects, events } = setup({ maxPayload: 4_000 })
    const inspector = createBusInspector({ bus, subjects, runtimeId: 'small' })
    const result = await privateAgent({ inspect: inspector.inspect }).run('go')
    await tick()
    expect(result.status).toBe('done')
    // The run's registration carries the machine definition (~8 KB): dropped; the rest goes through.
    expect(inspector.dropped).toBeGreaterThanOrEqual(1)
    expect(ofType(events(), '@xstate.actor').some((e) => e.sessionId === `run:${result.runId}`)).toBe(false)
    expect(ofType(events(), '@xstate.snapshot').some((e) => e.snapshot.value === 'done')).toBe(true)
  })

  it('counts publishes on a closed bus as dropped instead of throwing', async () => {
    const { bus, subjects } = setup()
    const inspector = createBusInspector({ bus, subjects, runtimeId: 'late' })
    await bus.close()
    const result = await privateAgent({ inspect: inspector.inspect }).run('go')
    expect(result.status).toBe('done')
    expect(inspector.published).toBe(0)
    expect(inspector.dropped).toBeGreaterThan(10)
  })

  it('rejects a runtime id that is not one subject token', () => {
    const { bus, subjects } = setup()
    expect(() => createBusInspector({ bus, subjects, runtimeId: 'a.b' })).toThrow(/token/)
  })

  it('manual API: local ids are prefixed with the runtime id, run ids are global, events keep safe fields only', async () => {
    const { bus, subjects, events } = setup()
    const inspector = createBusInspector({ bus, subjects, runtimeId: 'svc' })
    inspector.actor('planner', 'Planner', { value: 'idle', context: { note: 'PRIVATE NOTE', queue: ['x'], planId: 'p1' } })
    inspector.event('run:run_42', 'planner', { type: 'plan.request', callId: 'c1', text: 'PRIVATE TEXT' })
    inspector.snapshot('planner', { value: 'planning', context: { queue: [] } }, 'plan.request')
    await tick()
    expect(events()).toMatchObject([
      {
        type: '@xstate.actor',
        sessionId: 'svc:planner',
        rootId: 'svc:planner',
        name: 'Planner',
        definition: '{"id":"Planner"}',
        snapshot: { status: 'active', value: 'idle', context: { queue: 1, planId: 'p1' } },
      },
      { type: '@xstate.event', sessionId: 'svc:planner', sourceId: 'run:run_42', event: { type: 'plan.request', callId: 'c1' } },
      {
        type: '@xstate.snapshot',
        sessionId: 'svc:planner',
        event: { type: 'plan.request' },
        snapshot: { value: 'planning', context: { queue: 0 } },
      },
    ])
    expect(JSON.stringify(events())).not.toContain('PRIVATE')
    expect(inspector.sessionId('svc:planner')).toBe('svc:planner')

    const open = createBusInspector({ bus, subjects, runtimeId: 'svc2', includeContents: true })
    open.event(undefined, 'run:run_42', { type: 'note', text: 'VISIBLE TEXT' })
    await tick()
    expect(JSON.stringify(events().at(-1))).toContain('VISIBLE TEXT')
  })
})

describe('participants', () => {
  it('inspectReviewer: agent → reviewer (approval.request), reviewer → agent (approval.decision), ids only', async () => {
    const { bus, subjects, events } = setup()
    const agentSide = createBusInspector({ bus, subjects, runtimeId: 'agents' })
    const reviewerSide = createBusInspector({ bus, subjects, runtimeId: 'reviewers' })
    const reviewer = inspectReviewer(
      policyReviewer(() => ({ approved: false, reason: SECRETS.reason }), { name: 'policy' }),
      reviewerSide,
      { name: 'finance policy' },
    )
    const result = await privateAgent({ inspect: agentSide.inspect, reviewer }).run('go')
    await tick()
    const run = `run:${result.runId}`
    expect(ofType(events(), '@xstate.actor').find((e) => e.sessionId === 'reviewers:reviewer')).toMatchObject({
      name: 'finance policy',
      snapshot: { value: 'idle' },
    })
    const messages = ofType(events(), '@xstate.event').filter(
      (e) =>
        e.event.type.startsWith('approval.') && (e.sourceId === 'reviewers:reviewer' || e.sessionId === 'reviewers:reviewer'),
    )
    expect(messages.map((e) => [e.sourceId, e.sessionId, e.event.type])).toEqual([
      [run, 'reviewers:reviewer', 'approval.request'],
      ['reviewers:reviewer', run, 'approval.decision'],
    ])
    expect(messages[1]?.event).toMatchObject({ approved: false, callId: 'call_1', toolName: 'lookup' })
    const reviewerStates = ofType(events(), '@xstate.snapshot')
      .filter((e) => e.sessionId === 'reviewers:reviewer')
      .map((e) => e.snapshot.value)
    expect(reviewerStates).toEqual(['deciding', 'idle'])
    expect(secretsIn(events())).toEqual([])
  })

  it('inspectTool: a local tool appears as tool:<name>, called by the run and answering it', async () => {
    const { bus, subjects, events } = setup()
    const inspector = createBusInspector({ bus, subjects, runtimeId: 'solo' })
    const result = await privateAgent({ inspect: inspector.inspect, tools: [inspectTool(lookupTool(), inspector)] }).run('go')
    await tick()
    const run = `run:${result.runId}`
    expect(ofType(events(), '@xstate.actor').some((e) => e.sessionId === 'solo:tool:lookup' && e.name === 'tool:lookup')).toBe(
      true,
    )
    const messages = ofType(events(), '@xstate.event').filter((e) => e.event.type.startsWith('tool.'))
    expect(messages.map((e) => [e.sourceId, e.sessionId, e.event.type])).toEqual([
      [run, 'solo:tool:lookup', 'tool.call'],
      ['solo:tool:lookup', run, 'tool.result'],
    ])
    expect(messages[1]?.event).toMatchObject({ ok: true, callId: 'call_1', durationMs: expect.any(Number) })
    expect(secretsIn(events())).toEqual([])
  })

  it('inspectToolHost: the onCall / onResult callbacks of serveTools show agent → tool → agent', async () => {
    const { bus, subjects, events } = setup()
    const agentSide = createBusInspector({ bus, subjects, runtimeId: 'agents' })
    const hostSide = createBusInspector({ bus, subjects, runtimeId: 'host-7' })
    const seen: string[] = []
    const host = serveTools({
      bus,
      subjects,
      tools: [lookupTool()],
      ...inspectToolHost(hostSide, { tools: ['lookup'], onCall: (call) => seen.push(call.callId) }),
    })
    onTestFinished(() => host.close())
    await host.ready
    const remote = remoteTool({
      bus,
      subjects,
      name: 'lookup',
      description: 'Look a customer up.',
      parameters: { type: 'object' },
      needsApproval: true,
    })
    const result = await privateAgent({ inspect: agentSide.inspect, tools: [remote as ReturnType<typeof lookupTool>] }).run('go')
    await tick()
    expect(seen).toEqual(['call_1'])
    const run = `run:${result.runId}`
    expect(ofType(events(), '@xstate.actor').filter((e) => e.sessionId === 'host-7:tool:lookup')).toHaveLength(1)
    const messages = ofType(events(), '@xstate.event').filter((e) => e.event.type.startsWith('tool.'))
    expect(messages.map((e) => [e.sourceId, e.sessionId, e.event.type, e.event.ok])).toEqual([
      [run, 'host-7:tool:lookup', 'tool.call', undefined],
      ['host-7:tool:lookup', run, 'tool.result', true],
    ])
    expect(
      ofType(events(), '@xstate.snapshot')
        .filter((e) => e.sessionId === 'host-7:tool:lookup')
        .map((e) => e.snapshot.value),
    ).toEqual(['running', 'idle'])
    expect(secretsIn(events())).toEqual([])
  })
})
