/**
 * Local inspection (`createLocalInspector`): `@statelyai/inspect`'s inspector server and WebSocket
 * inspector, with our converter in front. A WebSocket client connects the way the bridge page does.
 */
import net from 'node:net'
import { createLocalInspector, type InspectorWireEvent, startBridgeServer } from '@signalbox/actors/inspect'
import { createAgent, policyReviewer, tool } from '@signalbox/core'
import { ScriptedProvider } from '@signalbox/core/testing'
import { describe, expect, it, onTestFinished } from 'vitest'
import { z } from 'zod'
import { freePort } from '../support/nats-server.ts'
import { connectCollector, eventually, ofType, stateOf } from './support.ts'

const SECRET = { input: 'L-INPUT-5521', rawId: '33.333.333', answer: 'L-ANSWER-0071' }

function agentWith(inspect: Parameters<typeof createAgent>[0]['inspect']) {
  return createAgent({
    id: 'quickstart',
    provider: new ScriptedProvider({
      script: [{ toolCalls: [{ name: 'lookup', arguments: { q: 'x' } }] }, { content: `Done. ${SECRET.answer}` }],
    }),
    tools: [
      tool({
        name: 'lookup',
        description: 'Look something up.',
        schema: z.object({ q: z.string() }),
        needsApproval: true,
        execute: async () => `DNI ${SECRET.rawId}`,
      }),
    ],
    hooks: { afterToolExecution: async ({ output }) => output.replace(/DNI [\d.]+/g, 'DNI ***') },
    reviewer: policyReviewer(() => true),
    inspect,
  })
}

describe('createLocalInspector', () => {
  it('serves the bridge page and streams an agent run to WebSocket clients, privately', async () => {
    const port = await freePort()
    const inspector = await createLocalInspector({ port, runtimeId: 'laptop' })
    onTestFinished(() => inspector.stop())
    expect(inspector.url).toBe(`http://localhost:${port}`)
    const page = await (await fetch(`http://127.0.0.1:${port}/`)).text()
    expect(page).toContain('<iframe id="inspector" src="https://stately.ai/inspect">')
    expect(page).toContain(`new WebSocket('ws://localhost:${port}')`)

    const client = await connectCollector(port)
    onTestFinished(() => client.close())
    const result = await agentWith(inspector.inspect).run(`Find ${SECRET.input}`)
    const run = `run:${result.runId}`
    await eventually(
      () => client.events.some((e) => e.sessionId === run && e.type === '@xstate.snapshot' && e.snapshot.status === 'done'),
      5_000,
      'the done snapshot',
    )
    const events: InspectorWireEvent[] = client.events
    expect(events[0]).toMatchObject({ type: '@xstate.actor', sessionId: run, name: `quickstart ${result.runId}` })
    expect(
      ofType(events, '@xstate.snapshot')
        .filter((e) => e.sessionId === run)
        .map(stateOf),
    ).toContain('{"running":{"turn":{"toolCalls":"awaitingApproval"}}}')
    expect(events.filter((e) => e.sessionId !== run).every((e) => e.sessionId.startsWith('laptop:x:'))).toBe(true)
    const text = JSON.stringify(events)
    expect([SECRET.input, SECRET.rawId, SECRET.answer, 'DNI ***'].filter((s) => text.includes(s))).toEqual([])
  })

  it('sends contents only when includeContents is set', async () => {
    const port = await freePort()
    const inspector = await createLocalInspector({ port, includeContents: true })
    onTestFinished(() => inspector.stop())
    const client = await connectCollector(port)
    onTestFinished(() => client.close())
    const result = await agentWith(inspector.inspect).run(`Find ${SECRET.input}`)
    await eventually(
      () =>
        client.events.some(
          (e) => e.sessionId === `run:${result.runId}` && e.type === '@xstate.snapshot' && e.snapshot.status === 'done',
        ),
      5_000,
      'the done snapshot',
    )
    const text = JSON.stringify(client.events)
    expect([SECRET.input, SECRET.rawId, SECRET.answer, 'DNI ***'].filter((s) => text.includes(s))).toHaveLength(4)
  })

  it('stop() closes the server and the pages connected to it; the port is free again', async () => {
    const port = await freePort()
    const inspector = await createLocalInspector({ port })
    const client = await connectCollector(port)
    await inspector.stop()
    await inspector.stop() // idempotent
    await client.closed
    const again = await startBridgeServer({ port })
    await again.stop()
  })

  it('a port in use is a clear error, not a crashed process', async () => {
    const blocker = net.createServer()
    await new Promise<void>((resolve) => blocker.listen(0, resolve))
    onTestFinished(() => new Promise<void>((resolve) => blocker.close(() => resolve())))
    const port = (blocker.address() as net.AddressInfo).port
    await expect(createLocalInspector({ port })).rejects.toMatchObject({ code: 'INSPECTOR_PORT_IN_USE' })
    await expect(startBridgeServer({ port: 0 })).rejects.toMatchObject({ code: 'INSPECTOR_BAD_PORT' })
  })
})
