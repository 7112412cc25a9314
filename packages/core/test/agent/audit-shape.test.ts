/**
 * What the audit keeps of what a person saw, and which calls start: one shape for `shown`
 * (the call's arguments as an object) whether a person approved the call or a correction
 * cancelled it; and calls that never run end with `tool.end` and no `tool.start`.
 */
import { readFileSync } from 'node:fs'
import { AUDIT_KINDS, createAgent, deny, type MemoryAuditLog, ScriptedReviewer, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { recordEvents, typesOf } from './helpers.ts'

const book = (booked: string[]) =>
  tool({
    name: 'book',
    description: 'Book a seat.',
    schema: z.object({ seat: z.string(), train: z.number() }),
    needsApproval: true,
    execute: ({ seat }) => {
      booked.push(seat)
      return `booked ${seat}`
    },
  })

describe('audit: what the person saw', () => {
  it('approvals and steering both store the call’s arguments as an object', async () => {
    const booked: string[] = []
    const provider = new ScriptedProvider({
      script: [
        {
          toolCalls: [
            { id: 'c1', name: 'book', arguments: { seat: '12A', train: 101 } },
            { id: 'c2', name: 'book', arguments: { seat: '12B', train: 101 } },
          ],
        },
        { content: 'One seat booked.' },
      ],
    })
    const agent = createAgent({ provider, tools: [book(booked)], reviewer: new ScriptedReviewer([true, 'never']) })
    agent.on('approval.requested', (e) => {
      if (e.request.callId === 'c2') agent.steer('Only one seat.', { from: 'tina' })
    })
    await agent.run('Two seats.')
    const entries = (agent.audit as MemoryAuditLog).entries
    const granted = entries.find((e) => e.kind === 'approval.granted')
    const steered = entries.find((e) => e.kind === 'steering.applied')
    expect(booked).toEqual(['12A'])
    expect(granted).toMatchObject({ callId: 'c1', toolName: 'book', shown: { seat: '12A', train: 101 } })
    expect(steered).toMatchObject({ callId: 'c2', toolName: 'book', shown: { seat: '12B', train: 101 }, actor: 'tina' })
  })
})

describe('calls that never run', () => {
  it('denied, steered and invalid calls end with tool.end and no tool.start', async () => {
    const provider = new ScriptedProvider({
      script: [
        {
          toolCalls: [
            { id: 'denied', name: 'echo', arguments: { text: 'no' } },
            { id: 'invalid', name: 'echo', arguments: { text: 42 } },
            { id: 'unknown', name: 'nope', arguments: {} },
            { id: 'ran', name: 'echo', arguments: { text: 'yes' } },
          ],
        },
        { toolCalls: [{ id: 'steered', name: 'echo', arguments: { text: 'later' } }] },
        { content: 'done' },
      ],
    })
    const echo = tool({
      name: 'echo',
      description: 'Echo.',
      schema: z.object({ text: z.string() }),
      execute: ({ text }) => text,
    })
    const agent = createAgent({
      provider,
      tools: [echo],
      hooks: {
        beforeToolExecution: ({ callId }) => (callId === 'denied' ? deny('not this one') : undefined),
        afterToolExecution: ({ callId }) => {
          if (callId === 'ran') agent.steer('stop')
        },
      },
    })
    const events = recordEvents(agent)
    await agent.run('go')
    const started = events.flatMap((e) => (e.type === 'tool.start' ? [e.callId] : []))
    const ended = Object.fromEntries(events.flatMap((e) => (e.type === 'tool.end' ? [[e.callId, e.outcome]] : [])))
    expect(started).toEqual(['ran'])
    expect(ended).toEqual({
      denied: 'denied',
      invalid: 'invalid_arguments',
      unknown: 'unknown_tool',
      ran: 'executed',
      steered: 'steered',
    })
    expect(typesOf(events)).toContain('steering.applied')
  })
})

describe('docs/hitl.md', () => {
  const doc = readFileSync(new URL('../../../../docs/hitl.md', import.meta.url), 'utf8')
  it('documents every audit kind, the ready-made reviewers and answerers, and calls without tool.start', () => {
    for (const kind of AUDIT_KINDS) expect(doc).toContain(`\`${kind}\``)
    for (const name of ['policyReviewer(policy', 'new ScriptedReviewer(verdicts', 'functionAnswerer(fn']) {
      expect(doc).toContain(name)
    }
    expect(doc).toMatch(/`tool\.end` without a `tool\.start`/)
    expect(doc).toContain('`shown`')
  })
})
