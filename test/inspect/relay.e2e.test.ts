/**
 * Inspection across processes, end to end, with the real parts: two agent processes publish their
 * inspection events on a real NATS server (each with its own runtime id), a reviewer service in
 * this process approves after a short delay, and the relay (`startInspectionRelay`, what
 * `signalbox inspect` runs) serves them through `@statelyai/inspect`'s inspector server. We connect
 * the way the inspector's bridge does: a WebSocket client on the server, and the bridge page itself
 * in headless Chromium, whose iframe (a local stand-in for the hosted UI) must get every event.
 */
import { randomBytes } from 'node:crypto'
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type ReviewerService, serveReviewer } from '@signalbox/actors'
import {
  createBusInspector,
  type InspectionRelay,
  type InspectorWireEvent,
  inspectReviewer,
  startInspectionRelay,
} from '@signalbox/actors/inspect'
import { connectNatsBus, type NatsBus } from '@signalbox/actors/nats'
import { policyReviewer } from '@signalbox/core'
import { createSubjects } from '@signalbox/core/bus'
import type { Frame, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NATS_URL, uniquePrefix } from '../support/env.ts'
import { freePort } from '../support/nats-server.ts'
import {
  chromiumForFile,
  connectCollector,
  deleteStream,
  eventually,
  ofType,
  runScript,
  type ScriptProcess,
  sleep,
  startUiServer,
  stateOf,
  type TestBrowser,
  type UiServer,
  type WsCollector,
} from './support.ts'

const APPROVAL_DELAY_MS = 600
const tag = randomBytes(3).toString('hex')

interface Side {
  label: 'A' | 'B'
  runtimeId: string
  agentId: string
  includeContents: boolean
  secrets: { input: string; instructions: string; argument: string; rawId: string; answer: string }
  process?: ScriptProcess
  result?: { runId: string; status: string; output: string; published: number; dropped: number }
}

const sides: Side[] = [
  {
    label: 'A',
    runtimeId: `proc-a-${tag}`,
    agentId: 'alpha',
    includeContents: false,
    secrets: {
      input: 'A-INPUT-0193',
      instructions: 'A-INSTR-8812',
      argument: 'A-ARG-5521',
      rawId: '11.111.111',
      answer: 'A-ANSWER-7730',
    },
  },
  {
    label: 'B',
    runtimeId: `proc-b-${tag}`,
    agentId: 'beta',
    // Explicit opt-in on this side only: its contents may show, A's never.
    includeContents: true,
    secrets: {
      input: 'B-INPUT-3348',
      instructions: 'B-INSTR-2207',
      argument: 'B-ARG-6604',
      rawId: '22.222.222',
      answer: 'B-ANSWER-9915',
    },
  },
]
const REVIEWER_RUNTIME = `reviewers-${tag}`
const REVIEW_REASON = 'R-REASON-4471'

describe('inspection across processes (real NATS, @statelyai/inspect server, Chromium)', () => {
  const prefix = uniquePrefix()
  const subjects = createSubjects(prefix)
  const recordPath = join(tmpdir(), `signalbox-inspect-${tag}.jsonl`)
  let bus: NatsBus
  let ui: UiServer
  let relay: InspectionRelay
  let collector: WsCollector
  let browser: TestBrowser
  let page: Page
  let frame: Frame
  let reviewerService: ReviewerService
  let port: number

  const stream = () => collector.events
  const runOf = (side: Side) => `run:${side.result?.runId}`
  /** Everything that belongs to one side: its run, its runtime's actors, messages to or from them. */
  const scoped = (side: Side) =>
    stream().filter((e) => {
      const ids = [
        e.sessionId,
        e.type === '@xstate.event' ? e.sourceId : undefined,
        e.type === '@xstate.actor' ? e.parentId : undefined,
      ]
      return ids.some((id) => id !== undefined && (id === runOf(side) || id.startsWith(`${side.runtimeId}:`)))
    })

  beforeAll(async () => {
    bus = await connectNatsBus({
      servers: NATS_URL,
      prefix,
      name: `inspect-test-${tag}`,
      durable: { storage: 'memory' },
      reconnectTimeWaitMs: 100,
      drainTimeoutMs: 2_000,
    })
    ui = await startUiServer()
    port = await freePort()
    relay = await startInspectionRelay({ bus, subjects, port, url: ui.url, record: recordPath })
    collector = await connectCollector(port)

    browser = await chromiumForFile()
    page = await browser.newPage()
    await page.goto(relay.pageUrl)
    frame = await eventually(() => page.frames().find((f) => f.url() === ui.url), 10_000, 'the inspector UI iframe')
    await eventually(
      () => frame.evaluate(() => Array.isArray((globalThis as unknown as { received?: unknown[] }).received)),
      10_000,
      'the UI page script',
    )
    // The bridge page's own WebSocket (`const ws` in its script) is open.
    await eventually(
      () => page.evaluate('typeof ws !== "undefined" && ws.readyState === 1'),
      10_000,
      "the bridge page's WebSocket",
    )

    const reviewerInspector = createBusInspector({ bus, subjects, runtimeId: REVIEWER_RUNTIME })
    const approver = policyReviewer(
      async () => {
        await sleep(APPROVAL_DELAY_MS)
        return { approved: true, reason: REVIEW_REASON }
      },
      { name: 'approver' },
    )
    reviewerService = serveReviewer({
      bus,
      subjects,
      reviewer: inspectReviewer(approver, reviewerInspector, { name: 'approver' }),
    })
    await reviewerService.ready

    for (const side of sides) {
      const config = {
        natsUrl: NATS_URL,
        prefix,
        runtimeId: side.runtimeId,
        agentId: side.agentId,
        includeContents: side.includeContents,
        secrets: side.secrets,
      }
      side.process = runScript('test/inspect/fixtures/agent-process.ts', [JSON.stringify(config)])
    }
    const codes = await Promise.all(sides.map((side) => side.process?.exited))
    for (const [i, side] of sides.entries()) {
      if (codes[i] !== 0) throw new Error(`agent process ${side.label} exited with ${codes[i]}:\n${side.process?.stderr()}`)
      const lines = (side.process?.stdout() ?? '').trim().split('\n')
      side.result = JSON.parse(lines.at(-1) ?? '{}')
    }
    await eventually(
      () =>
        sides.every((side) =>
          ofType(stream(), '@xstate.snapshot').some((e) => e.sessionId === runOf(side) && e.snapshot.status === 'done'),
        ),
      10_000,
      "both runs' done snapshots",
    )
  }, 60_000)

  afterAll(async () => {
    for (const side of sides) side.process?.kill()
    await browser?.close().catch(() => {})
    collector?.close()
    reviewerService?.close()
    await relay?.stop()
    await ui?.close()
    if (bus) {
      await deleteStream(bus)
      await bus.close()
    }
    rmSync(recordPath, { force: true })
  })

  it('both runs finish; each process published its events and dropped none', () => {
    for (const side of sides) {
      expect(side.result).toMatchObject({ status: 'done', dropped: 0 })
      expect(side.result?.output).toContain(side.secrets.answer)
      // One XState actor per run (its wait work is a plain object): the run's own events, no child's.
      expect(side.result?.published).toBeGreaterThanOrEqual(20)
      expect(side.result?.runId).toMatch(/^run_[0-9a-f-]{36}$/)
    }
  })

  it('announces each agent run, the reviewer and each tool (@xstate.actor)', () => {
    const actors = ofType(stream(), '@xstate.actor')
    for (const side of sides) {
      const run = actors.find((e) => e.sessionId === runOf(side))
      expect(run).toMatchObject({ rootId: runOf(side), name: `${side.agentId} ${side.result?.runId}` })
      expect(JSON.parse(run?.definition ?? '{}').id).toBe('agent')
      expect(actors.find((e) => e.sessionId === `${side.runtimeId}:tool:lookup_${side.agentId}`)).toMatchObject({
        name: `tool:lookup_${side.agentId}`,
      })
      // No child of the run: its worker, which does the work of every wait state, is not an actor.
      expect(actors.filter((e) => e.parentId === runOf(side)).map((e) => e.name)).toEqual([])
    }
    expect(actors.find((e) => e.sessionId === `${REVIEWER_RUNTIME}:reviewer`)).toMatchObject({ name: 'approver' })
  })

  it('shows awaitingApproval while the approval is pending, then executingTool, then done', () => {
    const events = stream()
    for (const side of sides) {
      const run = runOf(side)
      const at = (predicate: (e: InspectorWireEvent) => boolean) => events.findIndex(predicate)
      const waiting = at((e) => e.sessionId === run && stateOf(e).includes('"awaitingApproval"'))
      const requested = at((e) => e.type === '@xstate.event' && e.sourceId === run && e.event.type === 'approval.request')
      const decided = at(
        (e) => e.type === '@xstate.event' && e.sessionId === run && e.sourceId === `${REVIEWER_RUNTIME}:reviewer`,
      )
      const executing = at((e) => e.sessionId === run && stateOf(e).includes('"executingTool"'))
      const done = at((e) => e.sessionId === run && e.type === '@xstate.snapshot' && e.snapshot.status === 'done')
      expect(waiting).toBeGreaterThanOrEqual(0)
      expect([waiting < requested, requested < decided, decided < executing, executing < done]).toEqual([true, true, true, true])
      // Nothing else happened to the run while the reviewer was deciding.
      const between = ofType(events.slice(waiting, decided), '@xstate.snapshot').filter((e) => e.sessionId === run)
      expect(new Set(between.map(stateOf))).toEqual(new Set(['{"running":{"turn":{"toolCalls":"awaitingApproval"}}}']))
      expect(between[0]?.snapshot.tags).toEqual(['wait', 'human'])
      const waitedMs = Number(events[decided]?.createdAt) - Number(events[waiting]?.createdAt)
      expect(waitedMs).toBeGreaterThanOrEqual(APPROVAL_DELAY_MS - 50)
      const runStates = ofType(events, '@xstate.snapshot')
        .filter((e) => e.sessionId === run)
        .map(stateOf)
      expect(runStates.slice(-5)).toEqual([
        '{"running":{"turn":{"toolCalls":"awaitingApproval"}}}',
        '{"running":{"turn":{"toolCalls":"executingTool"}}}',
        '{"running":{"turn":{"toolCalls":"runningAfterToolExecution"}}}',
        '{"running":{"turn":"callingModel"}}',
        '"done"',
      ])
    }
  })

  it('shows agent → reviewer → agent and agent → tool → agent in order', () => {
    for (const side of sides) {
      const run = runOf(side)
      const reviewer = `${REVIEWER_RUNTIME}:reviewer`
      const tool = `${side.runtimeId}:tool:lookup_${side.agentId}`
      const messages = ofType(stream(), '@xstate.event')
        .filter((e) => [reviewer, tool].includes(e.sessionId) || [reviewer, tool].includes(e.sourceId ?? ''))
        .filter((e) => e.sessionId === run || e.sourceId === run)
        .map((e) => [e.sourceId, e.sessionId, e.event.type])
      expect(messages).toEqual([
        [run, reviewer, 'approval.request'],
        [reviewer, run, 'approval.decision'],
        [run, tool, 'tool.call'],
        [tool, run, 'tool.result'],
      ])
    }
  })

  it('keeps session ids unique across the two processes', () => {
    // (A run's actor is its only XState actor: its session id is its run id; the others carry their runtime id.)
    const actors = ofType(stream(), '@xstate.actor').map((e) => e.sessionId)
    expect(new Set(actors).size).toBe(actors.length)
    for (const side of sides) {
      const others = sides.filter((s) => s !== side)
      for (const e of scoped(side)) {
        for (const other of others) {
          expect(e.sessionId.startsWith(`${other.runtimeId}:`)).toBe(false)
          expect(e.sessionId).not.toBe(runOf(other))
        }
      }
    }
    // Every event names an actor that was announced first.
    const announced = new Set<string>()
    for (const e of stream()) {
      if (e.type === '@xstate.actor') announced.add(e.sessionId)
      else if (!e.sessionId.startsWith('run:') || sides.some((s) => runOf(s) === e.sessionId))
        expect(announced.has(e.sessionId)).toBe(true)
    }
  })

  it('leaves message contents, tool arguments and results (raw and masked ids) out unless opted in', () => {
    const [a, b] = sides as [Side, Side]
    const found = (text: string, needles: string[]) => needles.filter((needle) => text.includes(needle))
    const all = JSON.stringify(stream())
    const aText = JSON.stringify(scoped(a))
    const reviewerText = JSON.stringify(stream().filter((e) => e.sessionId.startsWith(`${REVIEWER_RUNTIME}:`)))
    // Side A did not opt in: none of its contents anywhere, not even the masked ID or the reviewer's reason.
    expect(found(all, Object.values(a.secrets))).toEqual([])
    expect(found(aText, ['DNI ***', REVIEW_REASON])).toEqual([])
    // The reviewer service did not opt in either: ids and outcomes only.
    expect(found(reviewerText, [REVIEW_REASON, ...Object.values(a.secrets), ...Object.values(b.secrets)])).toEqual([])
    const waiting = ofType(scoped(a), '@xstate.snapshot').find(
      (e) => e.sessionId === runOf(a) && stateOf(e).includes('awaitingApproval'),
    )
    expect(waiting?.snapshot.context).toMatchObject({
      agentId: 'alpha',
      messages: 3,
      current: { callId: 'call_1', toolName: 'lookup_alpha' },
    })
    // Side B opted in: its own contents are there (the masked ID, and the decision's reason it received).
    expect(
      found(JSON.stringify(scoped(b)), [b.secrets.answer, b.secrets.argument, b.secrets.rawId, 'DNI ***', REVIEW_REASON]),
    ).toHaveLength(5)
  })

  it('the bridge page in Chromium forwards every event to the inspector UI iframe', async () => {
    const ids = () => stream().map((e) => e.id)
    const received = await eventually(
      async () => {
        const got = (await frame.evaluate(
          () => (globalThis as unknown as { received: { id: string }[] }).received,
        )) as InspectorWireEvent[]
        return got.length >= stream().length ? got : undefined
      },
      10_000,
      'the iframe to receive every event',
    )
    expect(received.map((e) => e.id)).toEqual(ids())
    expect(received.length).toBe(relay.relayed)
    const runs = ofType(received, '@xstate.actor').map((e) => e.sessionId)
    for (const side of sides) expect(runs).toContain(runOf(side))
    // Same payloads, as posted by the bridge.
    expect(received.find((e) => e.sessionId === runOf(sides[0] as Side) && e.type === '@xstate.actor')).toEqual(
      stream().find((e) => e.sessionId === runOf(sides[0] as Side) && e.type === '@xstate.actor'),
    )
  })

  it('records the stream as JSONL, one event per line', async () => {
    const lines = await eventually(
      () => {
        const text = readFileSync(recordPath, 'utf8')
        const all = text.split('\n').filter(Boolean)
        return all.length >= relay.relayed ? all : undefined
      },
      5_000,
      'the record to catch up',
    )
    const recorded = lines.map((line) => JSON.parse(line) as InspectorWireEvent)
    expect(recorded.map((e) => e.id)).toEqual(stream().map((e) => e.id))
    expect(relay.invalid).toBe(0)
  })
})
