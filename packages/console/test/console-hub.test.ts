/** The console's bus side on an in-process bus: the inbox, one decision per item, the public surface. */
import { remoteReviewer } from '@signalbox/actors'
import { type ApprovalRequest, ConfigError } from '@signalbox/core'
import { InProcessBus } from '@signalbox/core/bus'
import { callDigest, encodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'
import { describe, expect, it, onTestFinished } from 'vitest'
import * as consolePackage from '../src/index.ts'
import { createConsoleHub, startConsole } from '../src/index.ts'
import type { ServerMessage } from '../src/view-model.ts'

function request(overrides: Partial<ApprovalRequest> = {}): ApprovalRequest {
  const now = Date.now()
  return {
    requestId: 'request_1',
    agentId: 'bank',
    runId: 'run_1',
    runPath: [],
    callId: 'call_1',
    toolName: 'pay',
    arguments: { to: 'ACME', amount: 250 },
    digest: callDigest('pay', { to: 'ACME', amount: 250 }),
    deadline: now + 60_000,
    requestedAt: now,
    ...overrides,
  }
}

async function until<T>(check: () => T | undefined): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = check()
    if (value !== undefined) return value
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error('condition not met')
}

describe('@signalbox/console', () => {
  it('exports exactly its public surface', () => {
    expect(Object.keys(consolePackage).sort()).toEqual([
      'ConsoleRequestError',
      'createConsoleHub',
      'layoutStatechart',
      'startConsole',
    ])
  })

  it('startConsole needs a reviewer name', async () => {
    await expect(startConsole({ bus: new InProcessBus(), reviewer: ' ' })).rejects.toBeInstanceOf(ConfigError)
  })
})

describe('createConsoleHub', () => {
  it('holds a request until decided, sends one decision signed by the reviewer, and refuses a second', async () => {
    const bus = new InProcessBus()
    const hub = createConsoleHub({ bus, reviewer: 'tina' })
    onTestFinished(() => hub.close())
    const messages: ServerMessage[] = []
    hub.subscribe((message) => messages.push(message))
    await hub.ready
    const reviewer = remoteReviewer({ bus })
    onTestFinished(() => reviewer.close())
    const decision = reviewer.review(request(), { signal: AbortSignal.timeout(5_000) })

    const item = await until(() => hub.snapshot().inbox[0])
    expect(item).toMatchObject({ kind: 'approval', toolName: 'pay', arguments: { to: 'ACME', amount: 250 }, callId: 'call_1' })
    expect(hub.decide('request_1', { approved: false, reason: 'too much' })).toEqual({ ok: true })
    expect(hub.decide('request_1', { approved: true })).toMatchObject({ ok: false, code: 'NOT_PENDING' })
    await expect(decision).resolves.toMatchObject({ approved: false, reason: 'too much', reviewer: 'tina', callId: 'call_1' })
    const settled = await until(() => hub.snapshot().settled[0])
    expect(settled).toMatchObject({ id: 'request_1', outcome: 'denied', by: 'tina', reason: 'too much' })
    expect(hub.snapshot().inbox).toEqual([])
    expect(messages.map((m) => m.type)).toEqual(['inbox.add', 'inbox.settled'])
  })

  it('drops events whose fields are not what an event carries', async () => {
    const bus = new InProcessBus()
    const hub = createConsoleHub({ bus, reviewer: 'tina' })
    onTestFinished(() => hub.close())
    await hub.ready
    const publish = (event: Record<string, unknown>) =>
      bus.publish(
        'signalbox.v1.agents.bank.events.run.start',
        encodeMessage({ v: PROTOCOL_VERSION, type: 'event', event } as never),
      )
    publish({ type: 'run.start', agentId: 'bank', runId: 'run_bad', at: 'yesterday' })
    publish({ type: 'run.start', agentId: 'bank', runId: 'run_bad2', at: 1, runPath: 'not a list' })
    publish({ type: 'run.start', agentId: 'bank', runId: 'run_ok', at: 1, runPath: [] })
    const runs = await until(() => (hub.snapshot().runs.length > 0 ? hub.snapshot().runs : undefined))
    expect(runs.map((run) => run.runId)).toEqual(['run_ok'])
  })
})
