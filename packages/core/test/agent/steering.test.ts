import {
  type Agent,
  type AgentOptions,
  ConfigError,
  createAgent,
  type MemoryAuditLog,
  type Reviewer,
  type RunHandle,
  tool,
} from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { SimulatedClock, waitFor } from 'xstate'
import { z } from 'zod'
import { deferred, eventsOf, ManualProvider, recordEvents, recordingTool } from './helpers.ts'

const batch = [
  { id: 'c1', name: 'move', arguments: { x: 'left' } },
  { id: 'c2', name: 'move', arguments: { x: 'down' } },
  { id: 'c3', name: 'move', arguments: { x: 'grab' } },
]

/** The model is "thinking" (ManualProvider) until the test replies. */
function setup(options: Partial<AgentOptions> = {}) {
  const clock = new SimulatedClock()
  clock.set(5_000)
  const move = recordingTool('move')
  const provider = new ManualProvider()
  const agent = createAgent({ provider, tools: [move.tool], clock, ...options })
  const events = recordEvents(agent)
  const audit = () => (agent.audit as MemoryAuditLog).entries
  /** What the model read for each call, from the request after the tool calls. */
  const read = (id: string) => {
    const messages = provider.requests[1]?.messages ?? []
    return messages.find((m) => m.role === 'tool' && m.tool_call_id === id)?.content
  }
  return { clock, agent, provider, events, audit, read, moves: move.calls }
}

describe('steering', () => {
  const steerers: [string, (agent: Agent, handle: RunHandle) => void][] = [
    ['agent.steer', (agent) => agent.steer('No, wait! The penguin!', { from: 'tina' })],
    ['handle.steer', (_agent, handle) => handle.steer('No, wait! The penguin!', { from: 'tina' })],
  ]
  it.each(steerers)(
    '%s while the model thinks cancels the next tool call; the model reads the correction',
    async (_name, steer) => {
      const s = setup()
      const handle = s.agent.start('Get me the bear!')
      await s.provider.called(1)
      steer(s.agent, handle)
      s.clock.increment(2_000)
      s.provider.reply({ toolCalls: [batch[0] as (typeof batch)[0]] })
      await s.provider.called(2)
      s.provider.reply({ content: 'Going for the penguin.' })
      const result = await handle.result
      expect(s.moves).toEqual([])
      expect(s.read('c1')).toBe('Cancelled. The person says: No, wait! The penguin!')
      expect(result.pendingSteering).toEqual([])
      expect(eventsOf(s.events, 'steering.queued')[0]).toMatchObject({ text: 'No, wait! The penguin!', from: 'tina' })
      expect(eventsOf(s.events, 'steering.applied')[0]).toMatchObject({
        callId: 'c1',
        toolName: 'move',
        text: 'No, wait! The penguin!',
        from: 'tina',
      })
      expect(eventsOf(s.events, 'tool.start')).toEqual([])
      expect(eventsOf(s.events, 'tool.end')[0]).toMatchObject({ outcome: 'steered', output: expect.stringContaining('penguin') })
      expect(s.audit()).toEqual([
        expect.objectContaining({
          kind: 'steering.applied',
          actor: 'tina',
          callId: 'c1',
          toolName: 'move',
          // One shape with approvals: the call's arguments as an object.
          shown: { x: 'left' },
          decision: 'No, wait! The penguin!',
          requestedAt: 5_000,
          decidedAt: 7_000,
          latencyMs: 2_000,
        }),
      ])
    },
  )

  it('cancel-next (the default): only the next call is cancelled, later calls of the batch run', async () => {
    const s = setup()
    const handle = s.agent.start('go')
    await s.provider.called(1)
    s.agent.steer('use the other claw')
    s.provider.reply({ toolCalls: batch })
    await s.provider.called(2)
    s.provider.reply({ content: 'ok' })
    await handle.result
    expect(s.moves).toEqual([{ x: 'down' }, { x: 'grab' }])
    expect(s.read('c1')).toBe('Cancelled. The person says: use the other claw')
    expect([s.read('c2'), s.read('c3')]).toEqual(['move:down', 'move:grab'])
  })

  it('cancel-batch: every remaining call of that reply is cancelled', async () => {
    const s = setup({ steeringPolicy: 'cancel-batch' })
    const handle = s.agent.start('go')
    await s.provider.called(1)
    s.agent.steer('stop, wrong machine')
    s.provider.reply({ toolCalls: batch })
    await s.provider.called(2)
    s.provider.reply({ toolCalls: [{ id: 'c4', name: 'move', arguments: { x: 'right' } }] })
    await s.provider.called(3)
    s.provider.reply({ content: 'ok' })
    await handle.result
    expect(s.read('c1')).toBe('Cancelled. The person says: stop, wrong machine')
    expect(s.read('c2')).toMatch(/^Cancelled/)
    expect(s.read('c3')).toMatch(/^Cancelled/)
    // Only that reply: the next turn's calls run again.
    expect(s.moves).toEqual([{ x: 'right' }])
    expect(eventsOf(s.events, 'tool.end').map((e) => e.outcome)).toEqual(['steered', 'steered', 'steered', 'executed'])
  })

  it('a correction during a running tool does not stop it; it applies at the next call', async () => {
    const release = deferred()
    const started = deferred()
    const slow = tool({
      name: 'slow',
      description: 'Slow.',
      schema: z.object({}),
      execute: async () => {
        started.resolve()
        await release.promise
        return 'slow done'
      },
    })
    const s = setup({ tools: [slow, recordingTool('move').tool] })
    const handle = s.agent.start('go')
    await s.provider.called(1)
    s.provider.reply({ toolCalls: [{ id: 's1', name: 'slow', arguments: {} }, batch[1] as (typeof batch)[1]] })
    await started.promise
    handle.steer('not down, up')
    release.resolve()
    await s.provider.called(2)
    s.provider.reply({ content: 'ok' })
    await handle.result
    expect(s.read('s1')).toBe('slow done')
    expect(s.read('c2')).toBe('Cancelled. The person says: not down, up')
  })

  it('a correction while a beforeToolExecution hook decides cancels that call (it has not started)', async () => {
    const hookDecides = deferred()
    const s = setup({ hooks: { beforeToolExecution: () => hookDecides.promise.then(() => ({ authorize: true })) } })
    const handle = s.agent.start('go')
    await s.provider.called(1)
    s.provider.reply({ toolCalls: [batch[0] as (typeof batch)[0], batch[1] as (typeof batch)[1]] })
    await waitFor(handle.actor, (snap) => snap.hasTag('hook') && snap.context.current?.callId === 'c1')
    handle.steer('wrong way')
    hookDecides.resolve()
    await s.provider.called(2)
    s.provider.reply({ content: 'ok' })
    await handle.result
    expect(s.read('c1')).toBe('Cancelled. The person says: wrong way')
    expect(s.moves).toEqual([{ x: 'down' }])
  })

  it('a run that only writes text keeps the correction pending', async () => {
    const s = setup()
    const handle = s.agent.start('tell me a story')
    await s.provider.called(1)
    s.agent.steer('make it shorter', { from: 'tina' })
    s.provider.reply({ content: 'Once upon a time...' })
    const result = await handle.result
    expect(result.status).toBe('done')
    expect(result.pendingSteering).toEqual([{ text: 'make it shorter', from: 'tina', at: 5_000 }])
    expect(eventsOf(s.events, 'steering.applied')).toEqual([])
  })

  it('a correction given before any run starts is delivered to the next run', async () => {
    const move = recordingTool('move')
    const provider = new ScriptedProvider({
      script: [{ toolCalls: [{ id: 'c1', name: 'move', arguments: { x: 'left' } }] }, { content: 'ok' }],
    })
    const agent = createAgent({ provider, tools: [move.tool] })
    agent.steer('start on the right')
    await agent.run('go')
    expect(move.calls).toEqual([])
    const tool = provider.requests[1]?.messages.find((m) => m.role === 'tool')
    expect(tool?.content).toBe('Cancelled. The person says: start on the right')
  })

  it('a correction while a reviewer decides withdraws the request and cancels the call', async () => {
    const reviewerSignal = deferred<AbortSignal>()
    const reviewer: Reviewer = {
      review: (_request, { signal }) => {
        reviewerSignal.resolve(signal)
        return new Promise(() => {})
      },
    }
    const dropped: unknown[] = []
    const drop = tool({
      name: 'drop_claw',
      description: 'Spends the last coin.',
      schema: z.object({}),
      needsApproval: true,
      execute: () => dropped.push('drop'),
    })
    const s = setup({ tools: [drop], reviewer })
    const handle = s.agent.start('go')
    await s.provider.called(1)
    s.provider.reply({ toolCalls: [{ id: 'd1', name: 'drop_claw', arguments: {} }] })
    const signal = await reviewerSignal.promise
    await waitFor(handle.actor, (snap) => snap.hasTag('human'))
    handle.steer('not yet, the penguin is moving')
    expect(signal.aborted).toBe(true)
    await s.provider.called(2)
    s.provider.reply({ content: 'waiting' })
    await handle.result
    expect(dropped).toEqual([])
    expect(s.read('d1')).toBe('Cancelled. The person says: not yet, the penguin is moving')
    expect(eventsOf(s.events, 'approval.decided')).toEqual([])
    expect(s.audit().map((e) => e.kind)).toEqual(['steering.applied'])
  })

  it('needs some text', () => {
    const s = setup()
    expect(() => s.agent.steer('  ')).toThrow(ConfigError)
  })
})
