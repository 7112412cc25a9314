import { createAgent, tool } from '@signalbox/core'
import { ControlReplyMessage } from '@signalbox/core/protocol'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { isName } from '../src/names.ts'

const CANDIDATES = ['payer', 'pay_bob-2', 'A'.repeat(64), 'A'.repeat(65), '', 'a.b', 'a*', 'a>', 'a b', 'héllo', 'a/b']

const accepts = (make: () => unknown) => {
  try {
    make()
    return true
  } catch {
    return false
  }
}

describe('agent ids and tool names: one rule', () => {
  it('createAgent, tool() and the wire schemas accept exactly the names isName accepts', () => {
    for (const candidate of CANDIDATES) {
      const expected = isName(candidate)
      expect(
        accepts(() => createAgent({ id: candidate, provider: new ScriptedProvider({ script: [] }) })),
        candidate,
      ).toBe(expected)
      expect(
        accepts(() => tool({ name: candidate, description: 'x', schema: z.object({}), execute: () => 'x' })),
        candidate,
      ).toBe(expected)
      const reply = { v: 1, type: 'control.reply', agentId: candidate, runs: [] }
      expect(ControlReplyMessage.safeParse(reply).success, candidate).toBe(expected)
    }
    expect(CANDIDATES.filter(isName)).toEqual(['payer', 'pay_bob-2', 'A'.repeat(64)])
  })
})
