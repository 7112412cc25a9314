/**
 * Scenario 7: events on the bus. `connectAgent` publishes every event of every run; an operator
 * in another actor watches one agent or all of them with `watchEvents`.
 */

import { connectAgent, watchEvents } from '@signalbox/actors'
import { type AgentEvent, createAgent, ScriptedReviewer, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { deploy, eventually, readByModel, recordEvents, recordingTool, TRANSPORTS } from './harness.ts'

for (const transport of TRANSPORTS) {
  describe(`events on the bus (${transport.name})`, () => {
    it('an observer sees every event of a run, in order; tool.end carries the masked output', async () => {
      const d = await deploy(transport)
      const phone = tool({
        name: 'lookup_phone',
        description: 'A customer phone number.',
        schema: z.object({ customer: z.string() }),
        needsApproval: true,
        execute: ({ customer }) => `${customer}: +1 555 0134`,
      })
      const provider = new ScriptedProvider({
        script: [
          { content: 'Let me check.', toolCalls: [{ id: 'call_phone', name: 'lookup_phone', arguments: { customer: 'ada' } }] },
          { content: 'Found it.' },
        ],
      })
      const agent = createAgent({
        id: 'watched',
        provider,
        tools: [phone],
        reviewer: new ScriptedReviewer([true], { name: 'local-reviewer' }),
        hooks: { afterToolExecution: ({ output }) => output.replace(/\d/g, '#') },
      })
      const local = recordEvents(agent)
      // A second agent on the same bus: its events must not reach a watcher of "watched".
      const other = createAgent({ id: 'other', provider: new ScriptedProvider({ script: [{ content: 'hi' }] }) })

      const agentBus = await d.bus('agent')
      for (const a of [agent, other]) {
        const connection = connectAgent(a, { bus: agentBus, subjects: d.subjects })
        d.defer(() => connection.close())
        await connection.ready
      }
      const observer = await d.bus('observer')
      const seen: AgentEvent[] = []
      const everything: AgentEvent[] = []
      const subjectsSeen = new Set<string>()
      const one = watchEvents({
        bus: observer,
        subjects: d.subjects,
        agentId: 'watched',
        onEvent: (e, meta) => {
          seen.push(e)
          subjectsSeen.add(meta.subject)
        },
      })
      const all = watchEvents({ bus: observer, subjects: d.subjects, onEvent: (e) => everything.push(e) })
      d.defer(() => {
        one.unsubscribe()
        all.unsubscribe()
      })
      await Promise.all([one.ready, all.ready])

      const [result] = await Promise.all([agent.run('call ada'), other.run('hello')])
      await eventually(() => seen.some((e) => e.type === 'run.end'), 3_000, 'run.end on the bus')
      await eventually(() => everything.filter((e) => e.type === 'run.end').length === 2, 3_000, 'both run.end on the bus')

      expect(result.output).toBe('Found it.')
      expect(seen.map((e) => e.type)).toEqual(local.events.map((e) => e.type))
      expect(seen).toEqual(local.events)
      expect(new Set(seen.map((e) => e.type))).toEqual(
        new Set([
          'run.start',
          'turn.start',
          'model.request',
          'text.delta',
          'model.response',
          'approval.requested',
          'approval.decided',
          'tool.start',
          'tool.end',
          'turn.end',
          'run.end',
        ]),
      )
      expect(seen.every((e) => e.agentId === 'watched')).toBe(true)
      expect(subjectsSeen).toContain(`${d.prefix}.agents.watched.events.tool_end`)
      const [end] = seen.filter((e): e is Extract<AgentEvent, { type: 'tool.end' }> => e.type === 'tool.end')
      expect(end?.output).toBe('ada: +# ### ####')
      expect(readByModel(provider, 'call_phone')).toBe('ada: +# ### ####')
      expect(JSON.stringify(seen)).not.toContain('555 0134')
      // The all-agents watcher saw both agents, each in its own order.
      expect(everything.filter((e) => e.agentId === 'watched').map((e) => e.type)).toEqual(seen.map((e) => e.type))
      expect(everything.filter((e) => e.agentId === 'other').map((e) => e.type)).toContain('run.end')
    })

    it('events too large for the bus are trimmed (truncated), not dropped', async () => {
      const d = await deploy(transport)
      const big = recordingTool('big', () => 'ok')
      // A transcript over the bus maximum: model.request carries it in full in-process.
      const huge = 'z'.repeat(1024 * 1024)
      const provider = new ScriptedProvider({ script: [{ content: 'fine' }] })
      const agent = createAgent({ id: 'chatty', provider, tools: [big.tool] })
      const bus = await d.bus('agent')
      const connection = connectAgent(agent, { bus, subjects: d.subjects })
      d.defer(() => connection.close())
      await connection.ready
      const observer = await d.bus('observer')
      const seen: { type: string; truncated: boolean }[] = []
      const sub = watchEvents({
        bus: observer,
        subjects: d.subjects,
        agentId: 'chatty',
        onEvent: (e, meta) => seen.push({ type: e.type, truncated: meta.truncated }),
      })
      d.defer(() => sub.unsubscribe())
      await sub.ready

      await agent.run(huge)
      await eventually(() => seen.some((e) => e.type === 'run.end'), 3_000, 'run.end on the bus')

      expect(seen.find((e) => e.type === 'model.request')).toEqual({ type: 'model.request', truncated: true })
      expect(seen.find((e) => e.type === 'run.start')?.truncated).toBe(true)
      expect(seen.find((e) => e.type === 'run.end')?.truncated).toBe(false)
      expect(d.handlerErrors).toEqual([])
    })
  })
}
