/**
 * Remote tools carry the call's idempotency key (`runId:callId`) to the tool host, which answers a
 * retried call (a resumed run, a reconnect) with the first call's answer instead of running the
 * tool again. A different call runs normally.
 */
import { randomIds, type Tool, type ToolContext, tool } from '@signalbox/core'
import type { Bus } from '@signalbox/core/bus'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { remoteTool, serveTools } from '../../src/index.ts'
import { IDEMPOTENCY_KEY_HEADER } from '../../src/tools/tool-host.ts'
import { type Deployment, deploy, TRANSPORTS } from './harness.ts'

function contextOf(runId: string, callId: string): ToolContext {
  return {
    signal: new AbortController().signal,
    callId,
    agentId: 'cashier',
    runId,
    runPath: [],
    clock: { now: () => Date.now(), setTimeout: (fn, ms) => setTimeout(fn, ms), clearTimeout: (id) => clearTimeout(id as never) },
    ids: randomIds,
    audit: { record: () => {} },
    emit: () => {},
  }
}

for (const transport of TRANSPORTS) {
  describe(`remote tool idempotency (${transport.name})`, () => {
    let d: Deployment | undefined
    afterEach(async () => {
      await d?.dispose()
    })

    it('a retried call gets the first answer and the tool runs once; another call runs again', async () => {
      d = await deploy(transport)
      const charges: number[] = []
      const charge = tool({
        name: 'charge',
        description: 'Charges the card.',
        schema: z.object({ cents: z.number().int() }),
        execute: ({ cents }) => {
          charges.push(cents)
          return `charged ${cents} (#${charges.length})`
        },
      })
      const hostBus = await d.bus('host')
      const host = serveTools({ bus: hostBus, subjects: d.subjects, tools: [charge] })
      d.defer(() => host.close())
      await host.ready
      const seen: (string | undefined)[] = []
      hostBus.subscribe(d.subjects.tool('charge'), (message) => {
        seen.push(message.headers?.[IDEMPOTENCY_KEY_HEADER])
      })

      const agentBus: Bus = await d.bus('agent')
      const remote: Tool<unknown> = remoteTool({
        bus: agentBus,
        subjects: d.subjects,
        name: 'charge',
        description: 'Charges the card.',
        parameters: charge.parameters,
      })
      const first = await remote.execute({ cents: 500 }, contextOf('run-1', 'call_1'))
      const retried = await remote.execute({ cents: 500 }, contextOf('run-1', 'call_1'))
      const other = await remote.execute({ cents: 500 }, contextOf('run-1', 'call_2'))

      expect(first).toBe('charged 500 (#1)')
      expect(retried).toBe('charged 500 (#1)')
      expect(other).toBe('charged 500 (#2)')
      expect(charges).toEqual([500, 500])
      expect(seen).toEqual(['run-1:call_1', 'run-1:call_1', 'run-1:call_2'])
    })
  })
}
