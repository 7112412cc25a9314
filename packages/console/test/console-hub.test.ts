/** The console's bus side on an in-process bus: the inbox, one decision per item, the public surface. */
import { remoteReviewer } from '@signalbox/actors'
import { type ApprovalRequest, ConfigError, SignalboxError } from '@signalbox/core'
import { InProcessBus } from '@signalbox/core/bus'
import {
  type ApprovalRequestMessage,
  callDigest,
  encodeMessage,
  PROTOCOL_VERSION,
  type QuestionMessage,
  type QuestionWithdrawnMessage,
} from '@signalbox/core/protocol'
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
    expect(Object.keys(consolePackage).sort()).toEqual(['ConsoleRequestError', 'createConsoleHub', 'startConsole'])
  })

  it('its request error is a SignalboxError with the code the page reads', () => {
    const error = new consolePackage.ConsoleRequestError('UNKNOWN_RUN', 'no run r1 seen on the bus')
    expect(SignalboxError.is(error, 'UNKNOWN_RUN')).toBe(true)
    expect(error).toMatchObject({ name: 'ConsoleRequestError', code: 'UNKNOWN_RUN', fault: 'user' })
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

/** The agent's `run.end` event for `runId` of agent `bank`, as its host publishes it. */
function runEnded(bus: InProcessBus, runId: string, status: 'done' | 'failed' | 'cancelled'): void {
  bus.publish(
    'signalbox.v1.agents.bank.events.run_end',
    encodeMessage({
      v: PROTOCOL_VERSION,
      type: 'event',
      event: { type: 'run.end', agentId: 'bank', runId, at: Date.now(), runPath: [], status },
    } as never),
  )
}

/** Time that moves only when the test moves it; due timers run at once, in order. */
function manualClock() {
  let now = 0
  let nextId = 0
  const timers = new Map<number, { at: number; fn: () => void }>()
  return {
    now: () => now,
    setTimeout(fn: (...args: unknown[]) => void, timeout: number) {
      timers.set(++nextId, { at: now + timeout, fn })
      return nextId
    },
    clearTimeout: (id: unknown) => void timers.delete(id as number),
    advance(ms: number) {
      now += ms
      for (;;) {
        const due = [...timers].filter(([, timer]) => timer.at <= now).sort(([, a], [, b]) => a.at - b.at)[0]
        if (due === undefined) return
        timers.delete(due[0])
        due[1].fn()
      }
    },
  }
}

describe('createConsoleHub: an item no longer asked', () => {
  it('refuses a decision on an item withdrawn (orphaned) before its settlement arrives; nothing is sent for it', async () => {
    const bus = new InProcessBus()
    const clock = manualClock()
    const hub = createConsoleHub({ bus, reviewer: 'tina', clock })
    onTestFinished(() => hub.close())
    await hub.ready
    const decisions: unknown[] = []
    const watch = bus.subscribe('signalbox.v1.approvals.bank.decisions', (message) => {
      decisions.push(JSON.parse(Buffer.from(message.data).toString('utf8')))
    })
    onTestFinished(() => watch.unsubscribe())
    // An agent that promised heartbeats and sends none: its request is withdrawn as orphaned.
    const asked = request({ requestedAt: 0, deadline: 60_000 })
    await bus.durablePublish(
      'signalbox.v1.approvals.bank',
      encodeMessage(<ApprovalRequestMessage>{ v: PROTOCOL_VERSION, type: 'approval.request', ...asked, heartbeatMs: 1_000 }),
      { msgId: asked.requestId },
    )
    await until(() => hub.snapshot().inbox[0])
    // Found silent after three missed beats, judged orphaned half a beat later.
    clock.advance(3_000)
    clock.advance(500)
    // Withdrawn here; the system's denial that settles it is still on its way to the inbox.
    expect(hub.decide('request_1', { approved: true })).toMatchObject({ ok: false, code: 'NOT_PENDING' })
    const settled = await until(() => hub.snapshot().settled[0])
    expect(settled).toMatchObject({ id: 'request_1', outcome: 'denied', by: 'system' })
    await bus.flush()
    expect(decisions).toEqual([expect.objectContaining({ requestId: 'request_1', approved: false, reviewer: 'system' })])
  })

  it('an item decided here whose run ends before the decision is confirmed stored says, once it is, what was decided', async () => {
    const inner = new InProcessBus()
    // The store's confirmation of the decision is late (a loaded server): the agent has read the
    // decision, run its tool and ended its run before this console hears that it is stored.
    let confirm: () => void = () => {}
    const confirmed = new Promise<void>((resolve) => {
      confirm = resolve
    })
    let storing = false
    const bus = new Proxy(inner, {
      get(target, key) {
        if (key === 'durablePublish') {
          const durablePublish: InProcessBus['durablePublish'] = async (subject, data, options) => {
            if (subject !== 'signalbox.v1.approvals.bank.decisions') return target.durablePublish(subject, data, options)
            storing = true
            await confirmed
            return target.durablePublish(subject, data, options)
          }
          return durablePublish
        }
        const value = Reflect.get(target, key)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const hub = createConsoleHub({ bus, reviewer: 'tina' })
    onTestFinished(() => hub.close())
    await hub.ready
    const reviewer = remoteReviewer({ bus: inner })
    onTestFinished(() => reviewer.close())
    const decision = reviewer.review(request(), { signal: AbortSignal.timeout(5_000) })
    await until(() => hub.snapshot().inbox[0])
    expect(hub.decide('request_1', { approved: true, arguments: { to: 'ACME', amount: 25 } })).toEqual({ ok: true })
    await until(() => (storing ? true : undefined))

    runEnded(inner, 'run_1', 'done')
    await until(() => hub.snapshot().runs.find((run) => run.runId === 'run_1' && run.status === 'done'))
    // Until the decision is heard, the item is taken for one its run left behind.
    expect(hub.snapshot().settled).toMatchObject([{ id: 'request_1', outcome: 'withdrawn', reason: 'the run ended (done)' }])
    confirm()
    await expect(decision).resolves.toMatchObject({ approved: true, arguments: { to: 'ACME', amount: 25 } })
    const settled = await until(() => hub.snapshot().settled.find((item) => item.outcome !== 'withdrawn'))
    expect(settled).toMatchObject({ id: 'request_1', outcome: 'approved', by: 'tina', reason: 'with edited arguments' })
    expect(hub.snapshot().settled).toHaveLength(1)
  })

  it('an item decided in another console whose run ends before the decision reaches this one says who decided', async () => {
    const inner = new InProcessBus()
    // This console hears stored decisions late (its consumer lags); the run's events do not.
    let deliver: () => void = () => {}
    const delivered = new Promise<void>((resolve) => {
      deliver = resolve
    })
    const lagging = new Proxy(inner, {
      get(target, key) {
        if (key === 'durableConsume') {
          const durableConsume: InProcessBus['durableConsume'] = (subject, handler, options) =>
            target.durableConsume(
              subject,
              async (message) => {
                if (subject.endsWith('.decisions')) await delivered
                await handler(message)
              },
              options,
            )
          return durableConsume
        }
        const value = Reflect.get(target, key)
        return typeof value === 'function' ? value.bind(target) : value
      },
    })
    const here = createConsoleHub({ bus: lagging, reviewer: 'tina' })
    const there = createConsoleHub({ bus: inner, reviewer: 'sam' })
    onTestFinished(() => here.close())
    onTestFinished(() => there.close())
    await Promise.all([here.ready, there.ready])
    const reviewer = remoteReviewer({ bus: inner })
    onTestFinished(() => reviewer.close())
    const decision = reviewer.review(request(), { signal: AbortSignal.timeout(5_000) })
    await until(() => here.snapshot().inbox[0])
    await until(() => there.snapshot().inbox[0])
    expect(there.decide('request_1', { approved: false, reason: 'not yet' })).toEqual({ ok: true })
    await expect(decision).resolves.toMatchObject({ approved: false, reviewer: 'sam' })

    runEnded(inner, 'run_1', 'done')
    await until(() => here.snapshot().settled[0])
    expect(here.snapshot().settled).toMatchObject([{ id: 'request_1', outcome: 'withdrawn', reason: 'the run ended (done)' }])
    deliver()
    const settled = await until(() => here.snapshot().settled.find((item) => item.outcome !== 'withdrawn'))
    expect(settled).toMatchObject({ id: 'request_1', outcome: 'denied', by: 'sam', reason: 'not yet' })
    expect(here.snapshot().settled).toHaveLength(1)
  })

  it("an item its run left behind takes the agent's withdrawal, and a decision arriving after that does not replace it", async () => {
    const bus = new InProcessBus()
    const hub = createConsoleHub({ bus, reviewer: 'tina' })
    onTestFinished(() => hub.close())
    await hub.ready
    const asked = request()
    // Another run's request: its decision, published after the late one, says the late one was read.
    const other = request({ requestId: 'request_2', runId: 'run_2', callId: 'call_2' })
    for (const item of [asked, other]) {
      await bus.durablePublish(
        'signalbox.v1.approvals.bank',
        encodeMessage(<ApprovalRequestMessage>{ v: PROTOCOL_VERSION, type: 'approval.request', ...item }),
        { msgId: item.requestId },
      )
    }
    await until(() => (hub.snapshot().inbox.length === 2 ? true : undefined))
    runEnded(bus, 'run_1', 'cancelled')
    await until(() => hub.snapshot().settled[0])
    // The agent says why it stopped waiting: the run was cancelled.
    await bus.durablePublish(
      'signalbox.v1.approvals.bank.withdrawn',
      encodeMessage({
        v: PROTOCOL_VERSION,
        type: 'approval.withdrawn',
        requestId: asked.requestId,
        agentId: 'bank',
        callId: asked.callId,
        digest: asked.digest,
        reason: 'the run was cancelled (wrong payee)',
        by: 'carol',
        withdrawnAt: Date.now(),
      } as never),
      { msgId: `withdrawn-${asked.requestId}` },
    )
    await until(() => hub.snapshot().settled.find((item) => item.by === 'carol'))
    // A decision someone made before hearing of it comes after: the agent refuses it, and so does the line.
    await bus.durablePublish(
      'signalbox.v1.approvals.bank.decisions',
      encodeMessage({
        v: PROTOCOL_VERSION,
        type: 'approval.decision',
        requestId: asked.requestId,
        callId: asked.callId,
        digest: asked.digest,
        approved: true,
        reviewer: 'sam',
        decidedAt: Date.now(),
      } as never),
      { msgId: 'late-decision' },
    )
    await bus.durablePublish(
      'signalbox.v1.approvals.bank.decisions',
      encodeMessage({
        v: PROTOCOL_VERSION,
        type: 'approval.decision',
        requestId: other.requestId,
        callId: other.callId,
        digest: other.digest,
        approved: false,
        reviewer: 'sam',
        decidedAt: Date.now(),
      } as never),
      { msgId: 'next-decision' },
    )
    await until(() => hub.snapshot().settled.find((item) => item.id === 'request_2'))
    expect(hub.snapshot().settled.find((item) => item.id === 'request_1')).toMatchObject({
      outcome: 'withdrawn',
      by: 'carol',
      reason: 'the run was cancelled (wrong payee)',
    })
  })

  it('a question the agent withdraws (its run was cancelled) leaves the inbox at once, saying by whom; an answer to it is refused', async () => {
    const bus = new InProcessBus()
    const hub = createConsoleHub({ bus, reviewer: 'tina' })
    onTestFinished(() => hub.close())
    await hub.ready
    const now = Date.now()
    const question: QuestionMessage = {
      v: PROTOCOL_VERSION,
      type: 'question',
      questionId: 'question_1',
      agentId: 'bank',
      runId: 'run_1',
      runPath: [],
      callId: 'call_ask',
      question: 'Which account?',
      deadline: now + 60_000,
      askedAt: now,
    }
    await bus.durablePublish('signalbox.v1.ask.bank', encodeMessage(question), { msgId: question.questionId })
    await until(() => hub.snapshot().inbox[0])
    const withdrawal: QuestionWithdrawnMessage = {
      v: PROTOCOL_VERSION,
      type: 'question.withdrawn',
      questionId: 'question_1',
      agentId: 'bank',
      callId: 'call_ask',
      reason: 'the run was cancelled (wrong customer)',
      by: 'carol',
      withdrawnAt: now + 1,
    }
    await bus.durablePublish('signalbox.v1.ask.bank.withdrawn', encodeMessage(withdrawal), { msgId: 'withdrawn-question_1' })
    const settled = await until(() => hub.snapshot().settled[0])
    expect(settled).toMatchObject({ id: 'question_1', outcome: 'withdrawn', by: 'carol' })
    expect(hub.snapshot().inbox).toEqual([])
    expect(hub.answer('question_1', 'the savings one')).toMatchObject({ ok: false, code: 'NOT_PENDING' })
  })
})
