/**
 * The console's own listeners (agent events, inspection snapshots, the audit trail) against
 * hostile input from fast-check: random bytes and JSON, mutated events, deep nesting, non-UTF-8.
 * No handler throws, no junk shows up as a run or an audit entry, and real traffic still does.
 */
import { defaultDurableSubjects, InProcessBus } from '@signalbox/core/bus'
import { callDigest, encodeMessage, PROTOCOL_VERSION } from '@signalbox/core/protocol'
import fc from 'fast-check'
import { describe, expect, it, onTestFinished } from 'vitest'
import { createConsoleHub } from '../src/index.ts'

const PREFIX = 'signalbox.v1'
const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`

/** Junk for one subject, built around a valid-looking message. */
function junk(template: Record<string, unknown>, seed: number): (string | Uint8Array)[] {
  const text = JSON.stringify(template)
  const keys = Object.keys(template)
  const arbitrary = fc.oneof(
    fc.uint8Array({ maxLength: 100 }),
    fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
    fc.tuple(fc.constantFrom(...keys), fc.jsonValue({ maxDepth: 2 })).map(([k, v]) => JSON.stringify({ ...template, [k]: v })),
    fc.integer({ min: 60, max: 100_000 }).map((depth) => text.replace('"DEEP"', deep(depth))),
    fc.nat().map((at) => {
      const bytes = new TextEncoder().encode(text)
      const i = at % bytes.length
      return new Uint8Array([...bytes.subarray(0, i), 0xff, ...bytes.subarray(i)])
    }),
  )
  return fc.sample(arbitrary, { numRuns: 60, seed })
}

describe('console hub under hostile input', () => {
  it('events, inspection snapshots and audit junk: no handler throws, nothing junk is shown', async () => {
    const errors: unknown[] = []
    const bus = new InProcessBus({ durableSubjects: defaultDurableSubjects(PREFIX), onHandlerError: (e) => errors.push(e) })
    const hub = createConsoleHub({ bus, reviewer: 'tina', onError: (e) => errors.push(e) })
    onTestFinished(() => hub.close())
    await hub.ready

    const event = {
      v: 1,
      type: 'event',
      event: { type: 'run.start', agentId: 'bank', runId: 'run_junk', at: 1, runPath: 'DEEP' },
    }
    for (const payload of junk(event, 1)) bus.publish(`${PREFIX}.agents.bank.events.run_start`, payload)
    const snapshot = { type: '@xstate.snapshot', sessionId: 'run:run_junk', snapshot: { value: 'DEEP' } }
    for (const payload of junk(snapshot, 2)) bus.publish(`${PREFIX}.inspect.rt1`, payload)
    const entry = {
      v: 1,
      type: 'audit',
      entry: {
        kind: 'approval.granted',
        agentId: 'bank',
        runId: 'run_junk',
        runPath: [],
        actor: 'mallory',
        decidedAt: 1,
        shown: 'DEEP',
      },
    }
    let n = 0
    for (const payload of junk(entry, 3)) {
      await bus.durablePublish(`${PREFIX}.audit.bank.approval_granted`, payload, { msgId: `junk-${++n}` })
    }

    // Real traffic after the junk still shows.
    bus.publish(
      `${PREFIX}.agents.bank.events.run_start`,
      encodeMessage({
        v: PROTOCOL_VERSION,
        type: 'event',
        event: { type: 'run.start', agentId: 'bank', runId: 'run_ok', at: 2, runPath: [] },
      } as never),
    )
    const real = {
      kind: 'approval.granted',
      agentId: 'bank',
      runId: 'run_ok',
      runPath: [],
      callId: 'call_1',
      toolName: 'pay',
      shown: { to: 'ACME' },
      digest: callDigest('pay', { to: 'ACME' }),
      actor: 'tina',
      decidedAt: 2,
    }
    await bus.durablePublish(
      `${PREFIX}.audit.bank.approval_granted`,
      encodeMessage({ v: 1, type: 'audit', entry: real } as never),
      {
        msgId: 'real',
      },
    )
    for (let i = 0; i < 300 && !hub.snapshot().audit.some((e) => e.runId === 'run_ok'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const view = hub.snapshot()
    expect(view.runs.map((run) => run.runId)).toEqual(['run_ok'])
    expect(view.audit.filter((e) => e.runId === 'run_ok')).toHaveLength(1)
    // A junk entry that happens to be well-formed may be listed (the audit is checked with --verify); no deep one is.
    expect(view.audit.every((e) => e.shown === undefined || typeof e.shown === 'string' || !Array.isArray(e.shown))).toBe(true)
    expect(errors).toEqual([])
  })
})
