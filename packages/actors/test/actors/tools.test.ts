/**
 * Scenario 6: tools as actors. A tool host serves tools on the bus; the agent uses them through
 * `remoteTool` / `discoverTools`. Every failure (bad arguments, a throwing tool, no host, a host
 * that hangs or stops mid-call) is a clear error result for the model, and the run goes on.
 */

import { discoverTools, remoteTool, serveTools } from '@signalbox/actors'
import { createAgent, randomIds, type Tool, ToolError, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type Deployment, deferred, deploy, readByModel, recordEvents, TRANSPORTS } from './harness.ts'

const lookup = tool({
  name: 'lookup',
  description: 'Finds a customer by id.',
  schema: z.object({ id: z.string().regex(/^c\d+$/), fields: z.array(z.string()).max(5).optional() }),
  execute: ({ id }) => ({ id, name: `Customer ${id}` }),
})

const explode = tool({
  name: 'explode',
  description: 'Always fails.',
  schema: z.object({}),
  execute: () => {
    throw new Error('the warehouse database is on fire')
  },
})

async function host(d: Deployment, tools: Tool<any>[], name = 'host', onCall?: (callId: string) => void) {
  const bus = await d.bus(name)
  const served = serveTools({ bus, subjects: d.subjects, tools, ...(onCall ? { onCall: (call) => onCall(call.callId) } : {}) })
  d.defer(() => served.close())
  await served.ready
  return served
}

async function agentWith(
  d: Deployment,
  tools: (bus: Awaited<ReturnType<Deployment['bus']>>) => Promise<Tool<any>[]> | Tool<any>[],
  script: ConstructorParameters<typeof ScriptedProvider>[0]['script'],
) {
  const bus = await d.bus('agent')
  const provider = new ScriptedProvider({ script })
  const agent = createAgent({ id: 'shopper', provider, tools: await tools(bus) })
  return { agent, provider, bus, events: recordEvents(agent), read: (callId: string) => readByModel(provider, callId) }
}

for (const transport of TRANSPORTS) {
  describe(`tools as actors (${transport.name})`, () => {
    it('a discovered remote tool returns its result; bad arguments and a throwing tool are error results', async () => {
      const d = await deploy(transport)
      const calls: string[] = []
      await host(d, [lookup, explode], 'host', (callId) => calls.push(callId))
      const s = await agentWith(d, (bus) => discoverTools({ bus, subjects: d.subjects, names: ['lookup', 'explode'] }), [
        {
          toolCalls: [
            { id: 'call_ok', name: 'lookup', arguments: { id: 'c42' } },
            { id: 'call_bad', name: 'lookup', arguments: { id: 'nope', fields: 'all' } },
            { id: 'call_boom', name: 'explode', arguments: {} },
          ],
        },
        { content: 'done' },
      ])

      expect(s.agent.id).toBe('shopper')
      const result = await s.agent.run('find c42')

      expect(result.output).toBe('done')
      expect(JSON.parse(s.read('call_ok') ?? '')).toEqual({ id: 'c42', name: 'Customer c42' })
      // Bad arguments read as for a local tool, with the same outcome (the host listed the issues).
      const local = createAgent({
        provider: new ScriptedProvider({
          script: [
            { toolCalls: [{ id: 'call_bad', name: 'lookup', arguments: { id: 'nope', fields: 'all' } }] },
            { content: 'done' },
          ],
        }),
        tools: [lookup],
      })
      const localEvents = recordEvents(local)
      await local.run('find nope')
      const localEnd = localEvents.of('tool.end')[0]
      expect(s.read('call_bad')).toMatch(/^Error: invalid arguments for "lookup", the tool did not run:\n- id: .*\n- fields: /)
      expect(s.read('call_bad')).toBe(localEnd?.output)
      expect(s.events.of('tool.end').find((e) => e.callId === 'call_bad')?.outcome).toBe('invalid_arguments')
      expect(localEnd?.outcome).toBe('invalid_arguments')
      expect(s.read('call_boom')).toBe('Error: the warehouse database is on fire')
      // Invalid arguments never reach the tool.
      expect(calls).toEqual(['call_ok', 'call_boom'])
      const ends = s.events.of('tool.end')
      expect(ends.map((e) => [e.callId, e.isError])).toEqual([
        ['call_ok', false],
        ['call_bad', true],
        ['call_boom', true],
      ])
    })

    it('two hosts in the queue group share the calls: each call goes to exactly one host', async () => {
      const d = await deploy(transport)
      const byHost = new Map<string, string[]>()
      for (const name of ['host-a', 'host-b']) {
        byHost.set(name, [])
        await host(d, [lookup], name, (callId) => byHost.get(name)?.push(callId))
      }
      const calls = Array.from({ length: 20 }, (_, i) => ({ id: `call_${i}`, name: 'lookup', arguments: { id: `c${i}` } }))
      const s = await agentWith(
        d,
        (bus) => [
          remoteTool({
            bus,
            subjects: d.subjects,
            name: 'lookup',
            description: lookup.description,
            parameters: lookup.parameters,
          }),
        ],
        [{ toolCalls: calls }, { content: 'done' }],
      )

      await s.agent.run('look them all up')

      const all = [...(byHost.get('host-a') ?? []), ...(byHost.get('host-b') ?? [])]
      expect(all.sort()).toEqual(calls.map((c) => c.id).sort())
      expect(new Set(all).size).toBe(20)
      // Both hosts got work (round-robin in-process; random on NATS, P(all on one) = 2^-19).
      expect(byHost.get('host-a')?.length).toBeGreaterThan(0)
      expect(byHost.get('host-b')?.length).toBeGreaterThan(0)
      for (const call of calls) expect(JSON.parse(s.read(call.id) ?? '')).toMatchObject({ id: call.arguments.id })
    })

    it('no host: a clear TOOL_UNAVAILABLE result, and the run goes on', async () => {
      const d = await deploy(transport)
      const s = await agentWith(
        d,
        (bus) => [
          remoteTool({
            bus,
            subjects: d.subjects,
            name: 'lookup',
            description: 'x',
            parameters: lookup.parameters,
            timeoutMs: 5_000,
          }),
        ],
        [{ toolCalls: [{ id: 'call_1', name: 'lookup', arguments: { id: 'c1' } }] }, { content: 'done' }],
      )
      const started = Date.now()
      const result = await s.agent.run('look up c1')

      expect(result.output).toBe('done')
      expect(s.read('call_1')).toBe('Error: No tool host is serving "lookup" right now. Try another way, or tell the person.')
      expect(Date.now() - started).toBeLessThan(2_000) // at once, not at the timeout
      // The typed error behind it:
      const direct = remoteTool({ bus: s.bus, subjects: d.subjects, name: 'lookup', description: 'x', parameters: {} })
      const error = await Promise.resolve(
        direct.execute(
          { id: 'c1' },
          {
            signal: new AbortController().signal,
            callId: 'c',
            agentId: 'a',
            runId: 'r',
            runPath: [],
            clock: { now: Date.now, setTimeout, clearTimeout } as never,
            ids: randomIds,
            audit: { record() {} },
            emit() {},
          },
        ),
      ).catch((e: unknown) => e)
      expect(error).toBeInstanceOf(ToolError)
      expect((error as ToolError).code).toBe('TOOL_UNAVAILABLE')
    })

    it('a host that hangs: a timeout error result, and the run goes on', async () => {
      const d = await deploy(transport)
      const hang = tool({
        name: 'slow',
        description: 'Never returns and ignores its signal.',
        schema: z.object({}),
        execute: () => new Promise(() => {}),
      })
      await host(d, [hang])
      const s = await agentWith(
        d,
        (bus) => [
          remoteTool({ bus, subjects: d.subjects, name: 'slow', description: 'x', parameters: hang.parameters, timeoutMs: 300 }),
        ],
        [{ toolCalls: [{ id: 'call_1', name: 'slow', arguments: {} }] }, { content: 'done' }],
      )

      const started = Date.now()
      const result = await s.agent.run('be slow')

      expect(result.output).toBe('done')
      expect(Date.now() - started).toBeGreaterThanOrEqual(250)
      // The host answers at the call's deadline (just before the caller's timeout); under load the
      // caller's own timeout may win the race. Either way: a clear timeout, at about 300 ms.
      expect(s.read('call_1')).toMatch(
        /^Error: ("slow" did not finish before its deadline on the host; it was aborted\.|"slow" did not answer within 300 ms \(its host may have stopped\)\.)$/,
      )
      expect(Date.now() - started).toBeLessThan(2_000)
    })

    it('a host stopped mid-call answers at once with a clear error; the run goes on', async () => {
      const d = await deploy(transport)
      const started = deferred()
      const stuck = tool({
        name: 'stuck',
        description: 'Starts, then waits forever (ignoring its signal).',
        schema: z.object({}),
        execute: () => {
          started.resolve()
          return new Promise(() => {})
        },
      })
      const served = await host(d, [stuck])
      const s = await agentWith(
        d,
        (bus) => [
          remoteTool({
            bus,
            subjects: d.subjects,
            name: 'stuck',
            description: 'x',
            parameters: stuck.parameters,
            timeoutMs: 10_000,
          }),
        ],
        [{ toolCalls: [{ id: 'call_1', name: 'stuck', arguments: {} }] }, { content: 'done' }],
      )

      const run = s.agent.run('go')
      await started.promise
      const stoppedAt = Date.now()
      served.close()
      const result = await run

      expect(result.output).toBe('done')
      expect(Date.now() - stoppedAt).toBeLessThan(2_000) // not the 10 s timeout
      expect(s.read('call_1')).toMatch(/^Error: The tool host stopped while running "stuck"/)
      expect(served.running).toBe(0)
    })
  })
}
